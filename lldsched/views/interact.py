"""``interact``: controls over a function, and what the function shows below them.

The notebooks' sliders, drop-downs and check boxes.  It looks and behaves like
``ipywidgets.interact`` (the same controls made from the same abbreviations, in a box
with the same CSS class, the output replaced after every change) with two differences.

The first is when a control made from an abbreviation calls the function: a slider when
it is let go (or moved by a key), a text box on Enter, not at every value a drag or a
keystroke passes through (``continuous_update=False``).  The notebooks' functions
simulate and draw (04's overrun comparison: 0.3 to 0.8 s of CPU a call), and a drag
across 04's period slider passes 29 values: the calls queued, and the chart went on
changing long after the hand stopped.  A control passed as a widget is used as it is.

The second is how the output gets into the box:

* ``ipywidgets.interact`` runs the function inside ``with out:`` on an ``Output`` widget.
  That capture is done by the *front end*: the kernel tells it "outputs of this message
  go into this widget", and the front end appends them.  When a notebook is executed by
  nbclient (Voila, ``nbconvert --execute``), nbclient plays that front end: for each
  captured output it sends the widget's new state back to the kernel on the shell
  channel, while the same channel is awaiting the cell's execute reply.  The reply
  then sometimes arrives without waking that wait: a cell waits out its whole timeout,
  and with none (Voila's default) the page stays on "Executing N of M" for ever
  (jupyter/nbclient#312, open; jupyter/nbconvert#2003 and #2029 are the same hang).
* here the kernel runs the function with its output captured in the kernel
  (:class:`IPython.utils.capture.capture_output`: printed text, ``display()`` calls) and
  sets the ``Output`` widget's ``outputs`` itself, as ``Output.append_stdout`` does.
  Nothing is captured by the front end, so nbclient never writes to the shell channel.

A change calls the function on the kernel's own thread, between cells
(:class:`lldsched.views.widgetkit.OnKernelThread`): JupyterLab 4.4 and later send
widget messages on a kernel subshell, which ipykernel 7 handles on a thread of its own.
There the call's capture (it swaps the process's streams and the shell's display
publisher) overlapped a cell's running beside it (Run All, then a control changed at
once): ipykernel's dispatch of a message meanwhile failed on IPython's capturing
publisher (it has no ``set_parent``), the message was lost with its "idle", and
ipywidgets' page held back every later change of that control: it never answered
again.  A cell's output could also land in the box.  The capture's
publisher here takes ``set_parent`` (:func:`_publisher_class`), and changes made before the
call runs are one call, with the latest values.

What shows: printed text first (stdout, then stderr), then what the function displayed,
then its return value unless it is ``None`` (as ``interact`` displays it).  A figure
shows when it is displayed or returned (the package's figures draw themselves); unlike
``interact``, pyplot's pending figures are not flushed into the box.  The first
call happens in :func:`interact` and its exception propagates, so a broken function
fails the cell (and the notebook's test); an exception from a later change is shown in
the box, once, in the place it happened (after what was displayed before it), its
traceback as the notebook shows a cell's (IPython's: "Cell In[3], line 2", in colour),
as ``interact`` shows it (jupyter-widgets/ipywidgets#1155: a traceback is the box's
output like any other, replaced by the next call's).  So is one IPython catches itself
and shows through the shell's ``showtraceback`` (a ``_repr_html_`` of the return value,
or of something displayed, that raised): the kernel sent that one under the cell that
ran last, below the controls, which a queued call is not part of.

ipywidgets is imported on first use, through
:func:`lldsched.views.widgetkit.require_ipywidgets` (its error names the extra to install).
"""

from __future__ import annotations

import base64
import functools
import inspect
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from io import StringIO
from types import TracebackType
from typing import TYPE_CHECKING, Any

from lldsched.errors import ValidationError, shown
from lldsched.views.widgetkit import (
    OnKernelThread,
    bundle,
    close_tree,
    closes_when_its_cell_runs_again,
    require_ipywidgets,
)

if TYPE_CHECKING:
    import ipywidgets

__all__ = ["Interaction", "interact"]

Output = dict[str, Any]
"""One entry of an ``Output`` widget's ``outputs``, in the notebook format (nbformat 4)."""

_CSS_CLASS = "widget-interact"  # ipywidgets.interactive's: the same look


class Interaction:
    """A function called with the values of its controls, its output shown below them.

    ``controls`` maps each parameter given a control to its widget; ``output`` is the
    ``Output`` widget whose ``outputs`` hold what the last call showed; ``widget`` is the
    box of both, which is how the interaction shows (:func:`interact` displays it; so
    does leaving it as a cell's value); ``result`` is the last call's return value.
    :meth:`update` calls the function again, as a change of a control does;
    :meth:`close` stops that and closes what it made.
    """

    def __init__(
        self,
        function: Callable[..., object],
        controls: Mapping[str, object],
    ) -> None:
        widgets = require_ipywidgets()
        self.function = function
        self.controls: dict[str, ipywidgets.ValueWidget] = _controls(function, controls)
        self.output: ipywidgets.Output = widgets.Output()
        self.widget: ipywidgets.VBox = widgets.VBox(children=[*self.controls.values(), self.output])
        self.widget.add_class(_CSS_CLASS)
        self.result: object = None
        # The controls passed as widgets: the caller's, left open by close().
        self._given = [
            control for key, control in self.controls.items() if controls[key] is control
        ]
        self.update(raising=True)
        self._changes = OnKernelThread(self._changed_now)
        for control in self.controls.values():
            control.observe(self._changed, names="value")
        self._closed = False
        closes_when_its_cell_runs_again(self)

    def values(self) -> dict[str, object]:
        """The arguments the next call gets: each control's current value."""
        return {name: control.value for name, control in self.controls.items()}

    def update(self, *, raising: bool = False) -> None:
        """Call the function with the controls' values and show what it printed,
        displayed and returned in :attr:`output`, replacing what was there.  An
        exception propagates when ``raising``, else its traceback is what is shown."""
        with _captured() as captured:
            try:
                self.result = self.function(**self.values())
            except Exception as exc:
                if raising:
                    raise
                self.result = None
                captured.outputs.append(_Failed(exc, _below(exc, 1)))  # not update's frame
            else:
                if self.result is not None:  # formatted in the capture: see _captured
                    data, metadata = _formatted(self.result)
                    captured.outputs.append({"data": data, "metadata": metadata})
        self.output.outputs = (*_streams(captured), *_displayed(captured))

    def _changed(self, _change: object) -> None:
        self._changes.request()  # on the kernel's thread, now or between cells

    def _changed_now(self) -> None:
        if not self._closed:  # closed while the call waited for the kernel's thread
            self.update()

    def close(self) -> None:
        """Stop calling the function on a change, and close every widget made here (the
        box, the output, the controls made from abbreviations, each one's layout and
        style); a control passed as a widget is the caller's, left open and no longer
        observed.  Idempotent."""
        if self._closed:
            return
        self._closed = True
        for control in self.controls.values():
            control.unobserve(self._changed, names="value")
        close_tree(self.widget, keep=self._given)

    def __repr__(self) -> str:
        name = getattr(self.function, "__name__", repr(self.function))
        return f"Interaction({name}, controls={list(self.controls)})"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """Shown as its box; the text a notebook keeps for viewers without widgets is
        this object's repr, not the box's (which spells out every control's state)."""
        return bundle(self.widget, lambda: repr(self), **kwargs)


def interact(function: Callable[..., object], /, **controls: object) -> Interaction:
    """Show controls for ``function``'s parameters and its output below them; call it
    again whenever a control changes.

    Each keyword names a parameter and gives its control as ``ipywidgets.interact``
    takes it: a widget (used as it is), ``(min, max)`` or ``(min, max, step)`` (a
    slider, integer if all three are), a list or dict (a drop-down), a bool (a check
    box), a string (a text box).  A tuple or list starts at the parameter's default
    when it has one.  Parameters left without a control keep their defaults.  A slider
    or text box made here calls ``function`` once its value is let go (a slider
    released, Enter), not at every step of a drag.  Returns the :class:`Interaction`,
    already displayed.

    Raises :class:`~lldsched.errors.ValidationError` for a keyword that is not a
    parameter, a parameter without a default left without a control, or a value that
    makes no control; and whatever the first call raises.
    """
    interaction = Interaction(function, controls)  # first: without ipywidgets, names the extra
    from IPython.display import display  # ipywidgets brings IPython

    display(interaction)  # type: ignore[no-untyped-call]  # IPython has no hints here
    return interaction


def _controls(
    function: Callable[..., object], given: Mapping[str, object]
) -> dict[str, ipywidgets.ValueWidget]:
    """The control of each parameter that has one, made as ipywidgets.interact makes it."""
    widgets = require_ipywidgets()
    if not callable(function):
        raise ValidationError(f"interact needs a function, not {shown(function)}")
    parameters = inspect.signature(function).parameters
    name = getattr(function, "__name__", repr(function))
    unknown = [key for key in given if key not in parameters]
    if unknown:
        raise ValidationError(
            f"{name} has no parameter {unknown[0]!r}; it takes {list(parameters)}"
        )
    missing = [
        key
        for key, parameter in parameters.items()
        if key not in given and parameter.default is inspect.Parameter.empty
    ]
    if missing:
        raise ValidationError(f"{name}'s parameter {missing[0]!r} has no default and no control")
    made: dict[str, ipywidgets.ValueWidget] = {}
    for key, abbreviation in given.items():
        if isinstance(abbreviation, widgets.Widget) and not isinstance(
            abbreviation, widgets.ValueWidget
        ):
            raise ValidationError(f"the control of {key!r}, {abbreviation!r}, has no value")
        default = parameters[key].default
        control = widgets.interactive.widget_from_abbrev(abbreviation, default)
        if not isinstance(control, widgets.ValueWidget):
            raise ValidationError(f"no control can be made for {key!r} from {abbreviation!r}")
        if control is not abbreviation and control.has_trait("continuous_update"):
            control.continuous_update = False  # a call per value let go, not per step
        if not control.description:
            control.description = key
        made[key] = control
    return made


@contextmanager
def _captured() -> Iterator[Any]:
    """What the function prints and displays, kept in the kernel, as IPython's
    ``capture_output`` keeps it, with a display publisher the kernel can still set a
    parent on (:func:`_publisher_class`), and what IPython would show through the
    shell's ``showtraceback`` meanwhile kept in its place (:func:`_kept_in`).  Outside
    IPython ``display`` prints, and a representation that raised prints its traceback,
    so both are caught as text."""
    from IPython import get_ipython
    from IPython.core.displayhook import CapturingDisplayHook

    shell = get_ipython()
    stdout, stderr = StringIO(), StringIO()
    streams, hook = (sys.stdout, sys.stderr), sys.displayhook
    kernels = getattr(shell, "display_pub", None)  # None: no IPython shell here
    publisher = _publisher_class()(kernels)
    sys.stdout, sys.stderr = stdout, stderr
    if kernels is not None:
        shell.display_pub = publisher
        hook_of = CapturingDisplayHook  # IPython has no hints here:
        sys.displayhook = hook_of(shell=shell, outputs=publisher.outputs)  # type: ignore[no-untyped-call]
        own = vars(shell).get("showtraceback")  # None: the class's, as in every kernel
        shell.showtraceback = _kept_in(publisher.outputs)  # this instance's, for the call
    try:
        yield _Capture(stdout, stderr, publisher.outputs)
    finally:
        sys.stdout, sys.stderr = streams
        if kernels is not None:
            shell.display_pub = kernels
            sys.displayhook = hook
            if own is None:
                del shell.showtraceback  # the class's again
            else:
                shell.showtraceback = own


class _Capture:
    """What a call printed (``stdout``, ``stderr``) and, in order, what it displayed (the
    publisher's dicts, its ``data`` and ``metadata``), returned (a dict alike)
    and raised (:class:`_Failed`): ``outputs``, the publisher's own list."""

    def __init__(self, stdout: StringIO, stderr: StringIO, outputs: list[Any]) -> None:
        self._stdout, self._stderr, self.outputs = stdout, stderr, outputs

    @property
    def stdout(self) -> str:
        return self._stdout.getvalue()

    @property
    def stderr(self) -> str:
        return self._stderr.getvalue()


class _Failed:
    """An exception the call raised, or that IPython caught and would have shown (a
    representation that raised), kept in the capture's outputs in its place: written
    into the box as an error output (:func:`_error`)."""

    def __init__(self, exc: BaseException, tb: TracebackType | None) -> None:
        self.exc, self.tb = exc, tb


def _kept_in(outputs: list[Any]) -> Callable[..., None]:
    """The shell's ``showtraceback`` while the function runs: IPython calls it for an
    exception it catches and shows (a ``_repr_html_`` that raised, when the return
    value or a ``display()`` is formatted), and the kernel's would send it to the page
    under the parent of the moment: the cell that ran last, not the box (a queued call
    runs between cells).  Kept with the outputs, in its place, instead."""

    def showtraceback(exc_tuple: Any = None, *_args: Any, **_kwargs: Any) -> None:
        _kind, exc, tb = exc_tuple if exc_tuple is not None else sys.exc_info()
        if exc is not None:
            outputs.append(_Failed(exc, tb))

    return showtraceback


@functools.cache
def _publisher_class() -> type:
    """IPython's capturing display publisher that also answers what the kernel's own
    publisher answers (``set_parent``, ``set_thread_parent``) by passing it on to it:
    ipykernel 7 sets the parent of each message it dispatches, on any of its threads,
    through the shell's publisher of the moment, and IPython's capturing one has no
    ``set_parent``: the dispatch failed and the message was lost.  Made on first use
    (IPython comes with ipywidgets)."""
    from IPython.core.displaypub import CapturingDisplayPublisher

    class Publisher(CapturingDisplayPublisher):
        def __init__(self, kernels: Any) -> None:
            super().__init__()  # type: ignore[no-untyped-call]  # IPython has no hints here
            self.kernels = kernels

        def __getattr__(self, name: str) -> Any:  # called only for what it has not
            if name == "kernels":  # not set yet: no recursion
                raise AttributeError(name)
            return getattr(self.kernels, name)

    return Publisher


def _streams(captured: Any) -> list[Output]:
    return [
        {"output_type": "stream", "name": name, "text": text}
        for name, text in (("stdout", captured.stdout), ("stderr", captured.stderr))
        if text
    ]


def _displayed(captured: Any) -> list[Output]:
    """What was displayed, returned and raised, in the order it happened."""
    return [
        _error(shown.exc, shown.tb)
        if isinstance(shown, _Failed)
        else _display_data(dict(shown["data"]), dict(shown.get("metadata") or {}))
        for shown in captured.outputs
    ]


def _formatted(value: object) -> tuple[dict[str, Any], dict[str, Any]]:
    """``value``'s representations, by the kernel's formatters (those registered in
    the notebook included), or IPython's defaults outside a kernel."""
    from IPython import get_ipython
    from IPython.core.formatters import DisplayFormatter

    shell = get_ipython()
    formatter = shell.display_formatter if shell is not None else DisplayFormatter()
    data, metadata = formatter.format(value)
    return dict(data), dict(metadata)


def _display_data(data: dict[str, Any], metadata: dict[str, Any]) -> Output:
    """A display_data output as the notebook format has it: binary data (a PNG) in
    base64 text, as the kernel sends a display message (the widget's state would
    otherwise carry raw bytes, which front ends do not read as an image)."""
    encoded = {
        mime: base64.b64encode(value).decode("ascii") if isinstance(value, bytes) else value
        for mime, value in data.items()
    }
    return {"output_type": "display_data", "data": encoded, "metadata": metadata}


def _below(exc: BaseException, frames: int) -> TracebackType | None:
    """``exc``'s traceback without its first ``frames`` frames (those of this module)."""
    tb = exc.__traceback__
    for _ in range(frames):
        tb = tb.tb_next if tb is not None else None
    return tb


def _error(exc: BaseException, tb: TracebackType | None) -> Output:
    """An error output of ``exc`` from ``tb`` down, its traceback as the notebook shows a
    cell's (IPython's: "Cell In[3], line 2", the lines around each, in colour), which is
    what ``ipywidgets.interact`` shows in its box; outside IPython, Python's own."""
    from IPython import get_ipython

    formatter = getattr(get_ipython(), "InteractiveTB", None)
    if formatter is not None:
        lines = formatter.structured_traceback(type(exc), exc, tb, tb_offset=0)
    else:
        lines = "".join(traceback.format_exception(type(exc), exc, tb)).splitlines()
    return {
        "output_type": "error",
        "ename": type(exc).__name__,
        "evalue": str(exc),
        "traceback": list(lines),
    }
