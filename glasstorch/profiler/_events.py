"""What a profile returns: events, their averages per name, and the table.

A stopped profile turns its spans and device work (:mod:`._record`) into
:class:`FunctionEvent` objects, with PyTorch's attribute names and times in
microseconds since the profile started:

* a host event is an operation, a backward node, a ``record_function`` block
  or a launch (``cudaLaunchKernel``); its ``cpu_children`` ran inside it, and
  its ``kernels`` are the device work it launched itself;
* a device event is a kernel or a memory copy on one stream.

Self versus total: an event's *total* CPU time is its whole span; its *self*
CPU time is that minus the spans of its children, i.e. the time spent in the
event's own code. Its total CUDA time adds up the device time of the kernels
it launched, itself or through its children; its self CUDA time counts only
the kernels it launched itself. Summing self times over all events counts
every microsecond once, which is why the table's percentages use them.

:meth:`EventList.key_averages` groups events by name (and input shapes, if
asked) into :class:`FunctionEventAvg` rows, and :meth:`EventList.table` prints
them in PyTorch's layout.
"""

from __future__ import annotations

from collections.abc import Iterable

from glasstorch.profiler._record import DeviceType, Recorder

__all__ = ["DeviceType", "EventList", "FunctionEvent", "FunctionEventAvg", "Interval"]


class Interval:
    """A start and an end, in microseconds since the profile started."""

    __slots__ = ("start", "end")

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """The length of the interval in microseconds."""
        return self.end - self.start

    def __repr__(self) -> str:
        return f"Interval(start={self.start:.3f}, end={self.end:.3f})"


class FunctionEvent:
    """One recorded event: a span of host work, or a kernel or copy on the device.

    Attributes:
        id: unique within the profile; a device event shares it with its launch.
        name: e.g. ``"aten::mm"``, ``"MulBackward0"``, ``"matmul_f32"``.
        key: the name, which :meth:`EventList.key_averages` groups by.
        category: the Chrome trace's category: ``"cpu_op"``, ``"user_annotation"``,
            ``"cuda_runtime"``, ``"kernel"`` or ``"gpu_memcpy"``.
        device_type: :attr:`DeviceType.CPU` for host events, ``CUDA`` for device ones.
        thread: the native thread id (host), or the stream's number (device).
        device_index: the GPU's index for a device event, -1 for a host event.
        time_range: an :class:`Interval`, in microseconds since the profile started.
        input_shapes: the argument shapes, with ``record_shapes`` (else ``[]``).
        cpu_parent: the host event this one ran inside, or None.
        cpu_children: the host events that ran directly inside this one.
        kernels: the device events this host event launched itself.
        launch: for a device event, the ``cudaLaunchKernel`` (or
            ``cudaMemcpyAsync``) host event that queued it.
        count: 1 (so events and averages read alike).
    """

    def __init__(
        self,
        id: int,
        name: str,
        category: str,
        device_type: DeviceType,
        thread: int,
        start_us: float,
        end_us: float,
        input_shapes: list | None = None,
        device_index: int = -1,
    ) -> None:
        self.id = id
        self.name = name
        self.category = category
        self.device_type = device_type
        self.thread = thread
        self.device_index = device_index
        self.time_range = Interval(start_us, end_us)
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_children: list[FunctionEvent] = []
        self.kernels: list[FunctionEvent] = []
        self.launch: FunctionEvent | None = None
        self.count = 1

    @property
    def key(self) -> str:
        """What averages group by: the name."""
        return self.name

    @property
    def is_user_annotation(self) -> bool:
        """Whether a ``record_function`` block made this event."""
        return self.category == "user_annotation"

    @property
    def duration_us(self) -> float:
        """The event's length in microseconds."""
        return self.time_range.elapsed_us()

    # ------------------------------------------------------------- CPU times
    @property
    def cpu_time_total(self) -> float:
        """Host time from start to end, children included (0 for a device event)."""
        return self.duration_us if self.device_type is DeviceType.CPU else 0.0

    @property
    def self_cpu_time_total(self) -> float:
        """Host time spent in this event's own code: its span minus its children's."""
        if self.device_type is not DeviceType.CPU:
            return 0.0
        return self.cpu_time_total - sum(child.cpu_time_total for child in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        """Average host time per call (an event is one call)."""
        return self.cpu_time_total

    # ---------------------------------------------------------- device times
    @property
    def device_time_total(self) -> float:
        """Device time of the work this event launched, itself or through its children;
        for a device event, its own length."""
        if self.device_type is not DeviceType.CPU:
            return self.duration_us
        return self.self_device_time_total + sum(c.device_time_total for c in self.cpu_children)

    @property
    def self_device_time_total(self) -> float:
        """Device time of the work this event launched itself."""
        if self.device_type is not DeviceType.CPU:
            return self.duration_us
        return sum(kernel.duration_us for kernel in self.kernels)

    @property
    def device_time(self) -> float:
        """Average device time per call."""
        return self.device_time_total

    #: Memory is not recorded (``profile_memory`` is ignored): always 0, so that
    #: PyTorch's ``sort_by="cpu_memory_usage"`` and friends still work.
    cpu_memory_usage = self_cpu_memory_usage = 0
    device_memory_usage = self_device_memory_usage = 0

    # PyTorch's older names for the device times.
    cuda_time_total = device_time_total
    self_cuda_time_total = self_device_time_total
    cuda_time = device_time

    def __repr__(self) -> str:
        return (
            f"<FunctionEvent id={self.id} name={self.name} device_type={self.device_type.name} "
            f"start_us={self.time_range.start:.3f} end_us={self.time_range.end:.3f} "
            f"thread={self.thread} input_shapes={self.input_shapes}>"
        )


class FunctionEventAvg:
    """The events of one name (and input shapes) added together: a row of the table.

    Attributes:
        key: the name shared by the events.
        count: how many events were added.
        cpu_time_total, self_cpu_time_total, device_time_total,
        self_device_time_total: sums over the events (microseconds).
        input_shapes: the shapes, when grouped by input shape; else None.
        device_type: where the events ran.
        is_user_annotation: whether they come from ``record_function``.
    """

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.input_shapes = None
        self.device_type = DeviceType.CPU
        self.is_user_annotation = False
        self.cpu_parent = None
        # Memory is not recorded (see FunctionEvent).
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0
        self.device_memory_usage = self.self_device_memory_usage = 0

    def add(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        """Add one event's (or another average's) counts and times to this row."""
        if self.key is None:
            self.key = other.key
            self.device_type = other.device_type
            self.is_user_annotation = other.is_user_annotation
            self.cpu_parent = other.cpu_parent
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.device_time_total += other.device_time_total
        self.self_device_time_total += other.self_device_time_total
        return self

    def __iadd__(self, other: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        return self.add(other)

    @property
    def cpu_time(self) -> float:
        """Average host time per call, children included."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        """Average device time per call."""
        return self.device_time_total / self.count if self.count else 0.0

    @property
    def cuda_time_total(self) -> float:
        """PyTorch's older name of :attr:`device_time_total`."""
        return self.device_time_total

    @property
    def self_cuda_time_total(self) -> float:
        """PyTorch's older name of :attr:`self_device_time_total`."""
        return self.self_device_time_total

    @property
    def cuda_time(self) -> float:
        """PyTorch's older name of :attr:`device_time`."""
        return self.device_time

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
            f"cpu_time={self.cpu_time:.3f}us self_cuda_time={self.self_device_time_total:.3f}us "
            f"cuda_time={self.device_time:.3f}us count={self.count} "
            f"input_shapes={self.input_shapes}>"
        )


class EventList(list):
    """A list of :class:`FunctionEvent` (or of averages) with the profiler's reports.

    Args:
        events: the events.
        use_device: whether the profile observed the device (the table then
            has CUDA columns).
    """

    def __init__(self, events: Iterable = (), use_device: bool = False) -> None:
        super().__init__(events)
        self.use_device = use_device

    @property
    def self_cpu_time_total(self) -> float:
        """The host time of all the events, each microsecond counted once."""
        return sum(event.self_cpu_time_total for event in self)

    def key_averages(self, group_by_input_shape: bool = False) -> EventList:
        """One :class:`FunctionEventAvg` per name (per name and input shapes if asked),
        in the order each name first appears."""
        rows: dict = {}
        for event in self:
            key = event.key
            if group_by_input_shape:
                key = (key, str(event.input_shapes))
            row = rows.get(key)
            if row is None:
                row = rows[key] = FunctionEventAvg()
                if group_by_input_shape:
                    row.input_shapes = event.input_shapes
            row.add(event)
        return EventList(rows.values(), use_device=self.use_device)

    def total_average(self) -> FunctionEventAvg:
        """All the events added into one row, keyed ``"Total"``."""
        total = FunctionEventAvg()
        for event in self:
            total.add(event)
        total.key = "Total"
        return total

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
    ) -> str:
        """The events as a table in PyTorch's layout, one row per event (or average).

        Args:
            sort_by: an attribute to sort by, largest first: ``"cpu_time_total"``,
                ``"self_cpu_time_total"``, ``"cuda_time_total"``,
                ``"self_cuda_time_total"`` (or their ``device`` spellings),
                ``"cpu_time"``, ``"count"``; None keeps the list's order.
            row_limit: at most this many rows.
            max_src_column_width: accepted for PyTorch's signature (glasstorch
                records no stacks, so there is no source column).
            max_name_column_width: longer names are cut, ending in ``...``.
            max_shapes_column_width: the same for the input shapes.
            header: a title printed above the table.
            top_level_events_only: only events that ran inside no other event.

        Returns:
            The table as a string: a header, one line per row, and the total
            self CPU time (and self CUDA time when the device was observed).
        """
        del max_src_column_width
        return _table(
            self,
            sort_by=sort_by,
            row_limit=row_limit,
            name_width_limit=max_name_column_width,
            shapes_width_limit=max_shapes_column_width,
            header=header,
            top_level_only=top_level_events_only,
            use_device=self.use_device,
        )

    def export_chrome_trace(self, path: str) -> None:
        """Write the events as a Chrome trace (JSON) to ``path``; see :mod:`._chrome`."""
        from glasstorch.profiler._chrome import write_chrome_trace

        write_chrome_trace(self, path)

    def __str__(self) -> str:
        return self.table()


# ------------------------------------------------------------------ building


def build_events(recorder: Recorder, use_device: bool) -> EventList:
    """The events of a finished :class:`Recorder`, host and device, by start time."""
    origin = recorder.start_ns

    def us(ns: int) -> float:
        return (ns - origin) / 1000.0

    made: dict[int, FunctionEvent] = {}
    for span in recorder.spans:
        made[id(span)] = FunctionEvent(
            span.id,
            span.name,
            span.category,
            DeviceType.CPU,
            span.thread,
            us(span.start_ns),
            us(span.end_ns),
            span.input_shapes,
        )
    for span in recorder.spans:
        if span.parent is not None and id(span.parent) in made:
            event, parent = made[id(span)], made[id(span.parent)]
            event.cpu_parent = parent
            parent.cpu_children.append(event)

    events = list(made.values())
    streams: dict[int, int] = {}
    for work in recorder.device_work:
        if work.start_ns is None:
            continue
        event = FunctionEvent(
            work.id,
            work.name,
            "kernel" if work.kind == "kernel" else "gpu_memcpy",
            DeviceType.CUDA,
            stream_number(work.stream, streams),
            us(work.start_ns),
            us(work.end_ns),
            device_index=device_index(work.stream),
        )
        event.launch = made.get(id(work.launch))
        if work.launcher is not None and id(work.launcher) in made:
            made[id(work.launcher)].kernels.append(event)
        events.append(event)
    # By start; at equal starts the host first (a launch before its kernel), then the outer span.
    events.sort(
        key=lambda e: (e.time_range.start, e.device_type is not DeviceType.CPU, -e.time_range.end)
    )
    return EventList(events, use_device=use_device)


def stream_number(stream, numbers: dict[int, int]) -> int:
    """A small number naming ``stream`` in the trace: its own number if it has one
    (glasstorch's ``Stream.number``, 0 for the default stream, or PyTorch's
    ``stream_id``), else the order in which the profile first met it."""
    for attribute in ("number", "stream_id"):
        number = getattr(stream, attribute, None)
        if isinstance(number, int):
            return number
    identity = getattr(stream, "cuda_stream", None)
    if not isinstance(identity, int):
        identity = id(stream)
    return numbers.setdefault(identity, len(numbers))


def device_index(stream) -> int:
    """The index of the GPU ``stream`` belongs to (0 when the stream does not say)."""
    device = getattr(stream, "device", None)
    index = getattr(device, "index", None)
    if index is None:
        index = getattr(stream, "device_index", None)
    return int(index) if isinstance(index, int) else 0


# -------------------------------------------------------------------- table


def format_time(us: float) -> str:
    """A time in microseconds as PyTorch's tables print it: ``12.000us``, ``1.234ms``, ``2.000s``."""
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _percent(part: float, whole: float) -> str:
    return f"{(part / whole if whole else 0.0) * 100:.2f}%"


_SPACING = 2
_COLUMN = 12


def _table(
    events: EventList,
    sort_by: str | None,
    row_limit: int,
    name_width_limit: int,
    shapes_width_limit: int,
    header: str | None,
    top_level_only: bool,
    use_device: bool,
) -> str:
    if len(events) == 0:
        return ""
    self_cpu_sum = sum(event.self_cpu_time_total for event in events)
    self_device_sum = sum(
        event.self_device_time_total for event in events if event.device_type is not DeviceType.CPU
    )
    rows = list(events)
    if sort_by is not None:
        attribute = sort_by.replace("cuda", "device")
        rows.sort(key=lambda event: getattr(event, attribute), reverse=True)
    if top_level_only:
        rows = [event for event in rows if event.cpu_parent is None]
    rows = rows[: max(row_limit, 0)]

    name_width = min(max(len(event.key) for event in events) + 4, name_width_limit)
    show_shapes = any(event.input_shapes for event in events)
    shapes_width = min(max(len(str(e.input_shapes)) for e in events) + 4, shapes_width_limit)

    titles = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if use_device:
        titles += ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    titles.append("# of Calls")
    widths = [name_width] + [_COLUMN] * (len(titles) - 1)
    if show_shapes:
        titles.append("Input Shapes")
        widths.append(shapes_width)

    def line(cells: list[str]) -> str:
        # Only the name and the shapes are cut to fit; a title may overflow its
        # column ("CUDA time avg" has 13 characters), as in PyTorch's tables.
        return "".join(f"{cell:>{width}}" + " " * _SPACING for cell, width in zip(cells, widths))

    rule = "".join("-" * width + " " * _SPACING for width in widths)
    out = []
    if header is not None:
        out += ["=" * len(rule), header]
    out += [rule, line(titles), rule]
    for event in rows:
        cells = [
            _cut(event.key, name_width),
            _percent(event.self_cpu_time_total, self_cpu_sum),
            format_time(event.self_cpu_time_total),
            _percent(event.cpu_time_total, self_cpu_sum),
            format_time(event.cpu_time_total),
            format_time(event.cpu_time_total / event.count),
        ]
        if use_device:
            cells += [
                format_time(event.self_device_time_total),
                _percent(event.self_device_time_total, self_device_sum),
                format_time(event.device_time_total),
                format_time(event.device_time_total / event.count),
            ]
        cells.append(str(event.count))
        if show_shapes:
            cells.append(_cut(str(event.input_shapes), shapes_width))
        out.append(line(cells))
    out.append(rule)
    out.append(f"Self CPU time total: {format_time(self_cpu_sum)}")
    if use_device:
        out.append(f"Self CUDA time total: {format_time(self_device_sum)}")
    return "\n".join(out) + "\n"


def _cut(text: str, width: int) -> str:
    """``text``, cut to ``width`` characters with ``...`` at the end if longer."""
    return text if len(text) <= width else text[: width - 3] + "..."
