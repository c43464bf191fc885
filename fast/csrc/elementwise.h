/* elementwise.h: fill, copy (with casts), unary and binary operations, where.
 *
 * The operation codes below are matched to the names in UNARY_OPS and
 * BINARY_OPS of glasstorch/_kernels.py by name, not by position:
 * fast/elementwise.py looks up GT_UNARY_<NAME> / GT_BINARY_<NAME> for each
 * name, so a missing code fails at import. New codes are appended (ERF came
 * last), so the numbers need not follow the tuples' order. The codes run
 * 0 .. COUNT-1 without gaps, since they index the dispatch tables in
 * elementwise.c; shared_tests/test_op_tables.py checks these enums, the op
 * lists in elementwise.c (which ops give a bool result) and _kernels.py's
 * tuples and BOOL_RESULT_OPS against each other.
 *
 * Every function returns 0, or -1 when asked for a combination the table does
 * not hold (a bitwise op on floats, an output of the wrong dtype); the Python
 * glue turns -1 into an exception. Shapes are never checked: the frontend has
 * broadcast every input to the output's shape.
 */
#ifndef GT_ELEMENTWISE_H
#define GT_ELEMENTWISE_H

#include "gt_common.h"

/* cffi-begin */
enum {
    GT_UNARY_NEG = 0,
    GT_UNARY_ABS = 1,
    GT_UNARY_EXP = 2,
    GT_UNARY_LOG = 3,
    GT_UNARY_LOG1P = 4,
    GT_UNARY_EXPM1 = 5,
    GT_UNARY_SQRT = 6,
    GT_UNARY_RSQRT = 7,
    GT_UNARY_RECIPROCAL = 8,
    GT_UNARY_SIN = 9,
    GT_UNARY_COS = 10,
    GT_UNARY_TANH = 11,
    GT_UNARY_SIGMOID = 12,
    GT_UNARY_RELU = 13,
    GT_UNARY_SIGN = 14,
    GT_UNARY_FLOOR = 15,
    GT_UNARY_CEIL = 16,
    GT_UNARY_ROUND = 17,
    GT_UNARY_TRUNC = 18,
    GT_UNARY_LOGICAL_NOT = 19,
    GT_UNARY_BITWISE_NOT = 20,
    GT_UNARY_ISNAN = 21,
    GT_UNARY_ERF = 22,
    GT_UNARY_COUNT = 23
};

enum {
    GT_BINARY_ADD = 0,
    GT_BINARY_SUB = 1,
    GT_BINARY_MUL = 2,
    GT_BINARY_DIV = 3,
    GT_BINARY_FLOOR_DIVIDE = 4,
    GT_BINARY_REMAINDER = 5,
    GT_BINARY_POW = 6,
    GT_BINARY_MAXIMUM = 7,
    GT_BINARY_MINIMUM = 8,
    GT_BINARY_EQ = 9,
    GT_BINARY_NE = 10,
    GT_BINARY_LT = 11,
    GT_BINARY_LE = 12,
    GT_BINARY_GT = 13,
    GT_BINARY_GE = 14,
    GT_BINARY_LOGICAL_AND = 15,
    GT_BINARY_LOGICAL_OR = 16,
    GT_BINARY_LOGICAL_XOR = 17,
    GT_BINARY_BITWISE_AND = 18,
    GT_BINARY_BITWISE_OR = 19,
    GT_BINARY_BITWISE_XOR = 20,
    GT_BINARY_THRESHOLD_BACKWARD = 21,
    GT_BINARY_COUNT = 22
};

/* out[i] = value, converted to out's dtype (an integer value wraps around). */
int gt_fill_int(gt_view *out, int64_t value);
/* out[i] = value, converted to out's dtype (float to int truncates, NaN -> min). */
int gt_fill_float(gt_view *out, double value);
/* out[i] = src[i] converted to out's dtype; src may be the very same view. */
int gt_copy(gt_view *out, const gt_view *src);
/* out[i] = op(a[i]); out has a's dtype, or bool for logical_not and isnan. */
int gt_unary(int op, gt_view *out, const gt_view *a);
/* out[i] = op(a[i], b[i]); a and b share a dtype; out has it, or bool. */
int gt_binary(int op, gt_view *out, const gt_view *a, const gt_view *b);
/* gt_binary into a struct `out` that this call fills: a's shape and strides,
 * over out_data at out_offset, of dtype out_dtype (a fresh output). */
int gt_binary_fresh(int op, gt_view *out, char *out_data, int64_t out_offset, int32_t out_dtype,
                    const gt_view *a, const gt_view *b);
/* out[i] = a[i] + alpha * b[i]; out, a and b share an integer or float dtype (not
 * bool), out may be a. Floats use falpha, integers ialpha (wrapping). */
int gt_add_scaled(gt_view *out, const gt_view *a, const gt_view *b, double falpha,
                  int64_t ialpha);
/* out[i] = cond[i] ? a[i] : b[i]; cond is bool, out, a and b share a dtype. */
int gt_where(gt_view *out, const gt_view *cond, const gt_view *a, const gt_view *b);
/* cffi-end */

#endif /* GT_ELEMENTWISE_H */
