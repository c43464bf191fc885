"""What glasstorch leaves out on purpose, and why: the coverage page's "out of scope".

Each entry is ``(namespace, pattern, reason)``; the pattern is matched against a
name with :func:`fnmatch.fnmatchcase`. A name glasstorch has anyway counts as
supported, whatever this list says. Keep the list short and each reason true:
a name missing for no reason but time is *missing*, not out of scope.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

_JIT = "TorchScript and the JIT: glasstorch runs every program eagerly"
_QUANT = "quantized tensors and kernels: glasstorch computes in the tensors' own floating or integer dtype"
_COMPLEX = "complex dtypes: glasstorch's dtypes are real (floating, integer, bool)"
_DIST = "a distributed-training piece not built (glasstorch.distributed has the process groups and collectives)"
_VENDOR = (
    "a vendor library's entry point (cuDNN, MIOpen, oneDNN, FBGEMM, NNPACK, XNNPACK, NCCL, cuBLAS)"
)
_LAYOUTS = "sparse compressed layouts (CSR, CSC, BSR, BSC), nested and jagged tensors"
_COMPILE = "graph capture and export (torch.fx, torch.export, Inductor, CUDA graphs)"
_STORAGE = "legacy typed storages and per-dtype tensor classes, kept by PyTorch for old code"
_DATAPIPES = "torch.utils.data's DataPipes (deprecated in PyTorch)"
_INTERNAL = "PyTorch's internal helpers, exposed by accident of the module layout"
_OTHER_DEVICES = "devices other than the CPU and CUDA (MPS, XPU, MTIA) and their backends"
_LOW_PRECISION = "8-bit and smaller floating and sub-byte integer dtypes"
_NVIDIA_ONLY = "CUDA driver and NVIDIA tools glasstorch's device interface does not model (NVML, NVTX, jiterator, tunable ops, green contexts)"

_VIEW_COPIES = "the copying twins of views (torch.view_copy, ...), which exist for graph capture"
_VIEWS = (
    "alias as_strided detach diagonal expand indices narrow permute select slice split "
    "split_with_sizes squeeze t transpose unbind unfold unsqueeze values view view_as_real "
    "view_as_complex ccol_indices col_indices crow_indices row_indices"
).split()

#: ``(namespace, pattern, reason)``, matched in order.
OUT_OF_SCOPE = [
    # TorchScript, graph capture, export
    ("torch", "jit", _JIT),
    ("torch", "Script*", _JIT),
    ("torch", "*Type", _JIT),
    ("torch", "LiteScriptModule", _JIT),
    ("torch", "AliasDb", _JIT),
    ("torch", "Argument*", _JIT),
    ("torch", "CompleteArgumentSpec", _JIT),
    ("torch", "Block", _JIT),
    ("torch", "CallStack", _JIT),
    ("torch", "Code", _JIT),
    ("torch", "CompilationUnit", _JIT),
    ("torch", "ConcreteModuleType*", _JIT),
    ("torch", "DeepCopyMemoTable", _JIT),
    ("torch", "ErrorReport", _JIT),
    ("torch", "ExecutionPlan", _JIT),
    ("torch", "FileCheck", _JIT),
    ("torch", "FunctionSchema", _JIT),
    ("torch", "Graph*", _JIT),
    ("torch", "Gradient", _JIT),
    ("torch", "IODescriptor", _JIT),
    ("torch", "JITException", _JIT),
    ("torch", "Node", _JIT),
    ("torch", "OperatorInfo", _JIT),
    ("torch", "StaticModule", _JIT),
    ("torch", "TracingState", _JIT),
    ("torch", "Use", _JIT),
    ("torch", "Value", _JIT),
    ("torch", "classes", _JIT),
    ("torch", "ops", _JIT),
    ("torch", "library", _JIT),
    ("torch", "fork", _JIT),
    ("torch", "wait", _JIT),
    ("torch.nn.functional", "BroadcastingList*", _JIT),
    ("torch", "fx", _COMPILE),
    ("torch", "export", _COMPILE),
    ("torch", "cond", _COMPILE),
    ("torch", "while_loop", _COMPILE),
    ("torch", "Sym*", _COMPILE),
    ("torch", "sym_*", _COMPILE),
    ("torch.cuda", "CUDAGraph", _COMPILE),
    ("torch.cuda", "graph*", _COMPILE),
    ("torch.cuda", "make_graphed_callables", _COMPILE),
    ("torch.cuda", "is_current_stream_capturing", _COMPILE),
    # quantization
    ("torch", "q_*", _QUANT),
    ("torch", "qint*", _QUANT),
    ("torch", "quint*", _QUANT),
    ("torch", "qscheme", _QUANT),
    ("torch", "quantize*", _QUANT),
    ("torch", "quantized_*", _QUANT),
    ("torch", "dequantize", _QUANT),
    ("torch", "fake_quantize*", _QUANT),
    ("torch", "fused_moving_avg_obs_fake_quant", _QUANT),
    ("torch", "choose_qparams_optimized", _QUANT),
    ("torch", "per_*", _QUANT),
    ("torch", "empty_quantized", _QUANT),
    ("torch", "ao", _QUANT),
    ("torch", "quantization", _QUANT),
    ("torch.nn", "qat", _QUANT),
    ("torch.nn", "quantiz*", _QUANT),
    ("torch.nn", "intrinsic", _QUANT),
    ("torch.Tensor", "q_*", _QUANT),
    ("torch.Tensor", "qscheme", _QUANT),
    ("torch.Tensor", "int_repr", _QUANT),
    ("torch.Tensor", "dequantize", _QUANT),
    # complex numbers
    ("torch", "complex*", _COMPLEX),
    ("torch", "cfloat", _COMPLEX),
    ("torch", "cdouble", _COMPLEX),
    ("torch", "chalf", _COMPLEX),
    ("torch", "view_as_complex*", _COMPLEX),
    ("torch", "view_as_real*", _COMPLEX),
    ("torch", "polar", _COMPLEX),
    ("torch", "is_complex", _COMPLEX),
    ("torch", "is_conj", _COMPLEX),
    ("torch", "conj*", _COMPLEX),
    ("torch", "resolve_conj", _COMPLEX),
    ("torch.Tensor", "is_complex", _COMPLEX),
    ("torch.Tensor", "is_conj", _COMPLEX),
    ("torch.Tensor", "conj*", _COMPLEX),
    ("torch.Tensor", "resolve_conj", _COMPLEX),
    # distributed
    ("torch.nn", "SyncBatchNorm", _DIST),
    ("torch.cuda", "nccl", _DIST),
    # vendor libraries
    ("torch", "cudnn_*", _VENDOR),
    ("torch", "miopen_*", _VENDOR),
    ("torch", "mkldnn_*", _VENDOR),
    ("torch", "fbgemm_*", _VENDOR),
    ("torch", "_nnpack_*", _VENDOR),
    ("torch", "xnnpack_*", _VENDOR),
    ("torch.cuda", "current_blas_handle", _VENDOR),
    ("torch.cuda", "current_solver_handle", _VENDOR),
    ("torch.cuda", "has_magma", _VENDOR),
    ("torch.cuda", "gds", _VENDOR),
    # layouts other than strided and COO
    ("torch", "sparse_csr*", _LAYOUTS),
    ("torch", "sparse_csc*", _LAYOUTS),
    ("torch", "sparse_bsr*", _LAYOUTS),
    ("torch", "sparse_bsc*", _LAYOUTS),
    ("torch", "sparse_compressed_tensor", _LAYOUTS),
    ("torch", "nested", _LAYOUTS),
    ("torch", "jagged", _LAYOUTS),
    ("torch", "masked", _LAYOUTS),
    ("torch", "*crow_indices*", _LAYOUTS),
    ("torch", "*ccol_indices*", _LAYOUTS),
    ("torch", "*col_indices*", _LAYOUTS),
    ("torch", "*row_indices*", _LAYOUTS),
    ("torch.Tensor", "to_sparse_*", _LAYOUTS),
    ("torch.Tensor", "*crow_indices", _LAYOUTS),
    ("torch.Tensor", "*ccol_indices", _LAYOUTS),
    ("torch.Tensor", "*col_indices", _LAYOUTS),
    ("torch.Tensor", "*row_indices", _LAYOUTS),
    ("torch.Tensor", "is_nested", _LAYOUTS),
    # legacy storages and typed tensor classes
    ("torch", "*Storage", _STORAGE),
    ("torch", "StorageBase", _STORAGE),
    ("torch", "*Tensor", _STORAGE),
    ("torch.cuda", "*Storage", _STORAGE),
    ("torch.cuda", "*Tensor", _STORAGE),
    # DataPipes
    ("torch.utils.data", "*DataPipe", _DATAPIPES),
    ("torch.utils.data", "datapipes", _DATAPIPES),
    ("torch.utils.data", "DataChunk", _DATAPIPES),
    ("torch.utils.data", "functional_datapipe", _DATAPIPES),
    ("torch.utils.data", "graph*", _DATAPIPES),
    ("torch.utils.data", "guaranteed_datapipes_determinism", _DATAPIPES),
    ("torch.utils.data", "non_deterministic", _DATAPIPES),
    ("torch.utils.data", "argument_validation", _DATAPIPES),
    ("torch.utils.data", "runtime_validation*", _DATAPIPES),
    # internals
    ("torch", "DisableTorchFunction*", _INTERNAL),
    ("torch", "DispatchKey*", _INTERNAL),
    ("torch", "ExcludeDispatchKeyGuard", _INTERNAL),
    ("torch", "*Logger", _INTERNAL),
    ("torch", "LoggerBase", _INTERNAL),
    ("torch", "PyTorchFile*", _INTERNAL),
    ("torch", "*SerializationStorageContext", _INTERNAL),
    ("torch", "*StorageContext", _INTERNAL),
    ("torch", "Benchmark*", _INTERNAL),
    ("torch", "ThroughputBenchmark", _INTERNAL),
    ("torch", "AggregationType", _INTERNAL),
    ("torch", "Capsule", _INTERNAL),
    ("torch", "Tag", _INTERNAL),
    ("torch", "return_types", _INTERNAL),
    ("torch", "torch_version", _INTERNAL),
    ("torch", "version", _INTERNAL),
    ("torch", "overrides", _INTERNAL),
    ("torch", "testing", _INTERNAL),
    ("torch", "cpp", _INTERNAL),
    ("torch", "windows", _INTERNAL),
    *[("torch", f"{view}_copy", _VIEW_COPIES) for view in _VIEWS],
    ("torch", "batch_norm_*", _INTERNAL),
    ("torch", "native_*", _INTERNAL),
    ("torch", "autocast_*", _INTERNAL),
    ("torch.nn.functional", "has_torch_function*", _INTERNAL),
    ("torch.nn.functional", "assert_int_or_pair", _INTERNAL),
    ("torch.nn", "factory_kwargs", _INTERNAL),
    ("torch.nn", "common_types", _INTERNAL),
    ("torch.autograd", "has_torch_function", _INTERNAL),
    ("torch.autograd", "Profiler*", _INTERNAL),
    ("torch.autograd", "profiler_legacy", _INTERNAL),
    ("torch.autograd", "profiler_util", _INTERNAL),
    ("torch.autograd", "DeviceType", _INTERNAL),
    ("torch.autograd", "kineto_available", _INTERNAL),
    ("torch.autograd", "enforce_grad_layout_policy", _INTERNAL),
    ("torch.autograd.function", "BackwardCFunction", _INTERNAL),
    ("torch.autograd.function", "FunctionMeta", _INTERNAL),
    ("torch.Tensor", "is_quantized", _QUANT),
    # other devices and low precision
    ("torch", "mps", _OTHER_DEVICES),
    ("torch", "xpu", _OTHER_DEVICES),
    ("torch", "mtia", _OTHER_DEVICES),
    ("torch.Tensor", "is_mps", _OTHER_DEVICES),
    ("torch.Tensor", "is_xpu", _OTHER_DEVICES),
    ("torch.Tensor", "is_mtia", _OTHER_DEVICES),
    ("torch.Tensor", "is_ipu", _OTHER_DEVICES),
    ("torch.Tensor", "is_maia", _OTHER_DEVICES),
    ("torch.Tensor", "is_meta", _OTHER_DEVICES),
    ("torch.Tensor", "is_vulkan", _OTHER_DEVICES),
    ("torch", "float8_*", _LOW_PRECISION),
    ("torch", "float4_*", _LOW_PRECISION),
    ("torch", "bits*", _LOW_PRECISION),
    ("torch", "int[1-7]", _LOW_PRECISION),
    ("torch", "uint[1-7]", _LOW_PRECISION),
    ("torch.nn.functional", "scaled_*mm", _LOW_PRECISION),
    ("torch.nn.functional", "ScalingType", _LOW_PRECISION),
    ("torch.nn.functional", "SwizzleType", _LOW_PRECISION),
    ("torch.cuda", "nvtx", _NVIDIA_ONLY),
    ("torch.cuda", "jiterator", _NVIDIA_ONLY),
    ("torch.cuda", "tunable", _NVIDIA_ONLY),
    ("torch.cuda", "green_contexts", _NVIDIA_ONLY),
    ("torch.cuda", "GreenContext", _NVIDIA_ONLY),
    ("torch.cuda", "cudart", _NVIDIA_ONLY),
    ("torch.cuda", "cudaStatus", _NVIDIA_ONLY),
    ("torch.cuda", "CUDAPluggableAllocator", _NVIDIA_ONLY),
    ("torch.cuda", "change_current_allocator", _NVIDIA_ONLY),
    ("torch.cuda", "power_draw", _NVIDIA_ONLY),
    ("torch.cuda", "temperature", _NVIDIA_ONLY),
    ("torch.cuda", "clock_rate", _NVIDIA_ONLY),
    ("torch.cuda", "utilization", _NVIDIA_ONLY),
    ("torch.cuda", "device_memory_used", _NVIDIA_ONLY),
    ("torch.cuda", "list_gpu_processes", _NVIDIA_ONLY),
]


def out_of_scope_reason(namespace: str, name: str) -> str | None:
    """Why ``namespace.name`` is out of scope, or ``None`` if it is not."""
    for space, pattern, reason in OUT_OF_SCOPE:
        if space == namespace and fnmatchcase(name, pattern):
            return reason
    return None
