"""lldsched.views.interact without a browser: the controls are ipywidgets.interact's, the
function's output is written into the Output widget's ``outputs`` (never captured with
``with out:``, which nbclient answers on the shell channel: jupyter/nbclient#312), a
change of a control calls the function again, and bad input is refused by name."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import ipywidgets
import pytest

from lldsched.errors import ValidationError
from lldsched.views import interact as interact_module
from lldsched.views.interact import Interaction, interact

ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SHOWN = ("value", "min", "max", "step", "description", "options", "_options_labels")


def state(widget: Any) -> dict[str, Any]:
    """What a control looks like: its type and the state the front end draws."""
    drawn = {key: value for key, value in widget.get_state().items() if key in SHOWN}
    return {"type": type(widget).__name__, **drawn}


@pytest.fixture
def displayed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """What interact hands to IPython's display (outside a kernel it would print)."""
    shown: list[object] = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **_: shown.extend(objs))
    yield shown


@pytest.fixture
def no_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entering an Output widget (``with out:``, the front-end capture) fails the test."""

    def entered(self: object) -> None:
        raise AssertionError("the Output widget was entered: its output is captured")

    monkeypatch.setattr(ipywidgets.Output, "__enter__", entered)


def pick(period: int = 60, policy: str = "SKIP", verbose: bool = False) -> str:
    print(f"period {period}, {policy}")
    return f"{policy}:{period}" if verbose else policy


def test_the_controls_are_the_ones_ipywidgets_interact_makes(displayed: list[object]) -> None:
    abbreviations: dict[str, Any] = {
        "period": (10, 300, 10),
        "policy": ["SKIP", "CATCH_UP"],
        "verbose": ipywidgets.Checkbox(value=True, description="say more"),
    }
    theirs = ipywidgets.interactive(pick, **abbreviations).kwargs_widgets
    abbreviations["verbose"] = ipywidgets.Checkbox(value=True, description="say more")
    ours = interact(pick, **abbreviations)
    assert [state(control) for control in ours.controls.values()] == [
        state(control) for control in theirs
    ]
    assert ours.controls["period"].value == 60  # the parameter's default, as interact does
    assert displayed == [ours]
    bundle = ours._repr_mimebundle_()
    assert bundle[WIDGET_VIEW]["model_id"] == ours.widget.model_id  # shown as its box
    assert bundle["text/plain"] == "Interaction(pick, controls=['period', 'policy', 'verbose'])"
    assert "widget-interact" in ours.widget._dom_classes  # interact's box, interact's CSS
    assert list(ours.widget.children) == [*ours.controls.values(), ours.output]


def test_the_output_is_written_not_captured_and_a_change_replaces_it(
    displayed: list[object], no_capture: None
) -> None:
    shown = interact(pick, period=(10, 300, 10), policy=["SKIP", "CATCH_UP"])
    assert shown.output.outputs == (
        {"output_type": "stream", "name": "stdout", "text": "period 60, SKIP\n"},
        {"output_type": "display_data", "data": {"text/plain": "'SKIP'"}, "metadata": {}},
    )
    assert shown.result == "SKIP"
    shown.controls["policy"].value = "CATCH_UP"
    shown.controls["period"].value = 120
    assert shown.output.outputs[0]["text"] == "period 120, CATCH_UP\n"
    assert len(shown.output.outputs) == 2
    assert shown.values() == {"period": 120, "policy": "CATCH_UP"}
    assert shown.output.msg_id == ""  # never pointed at a message to capture


def test_a_control_made_here_calls_once_let_go_and_a_given_widget_is_kept(
    displayed: list[object],
) -> None:
    """A drag across a slider made from ``(min, max, step)`` sends one value, on release
    (continuous_update off: each call simulates and draws); a text box, on Enter.  A
    widget passed in keeps the caller's choice."""
    given = ipywidgets.IntSlider(value=4, min=1, max=12)
    shown = interact(
        lambda period=60, name="x", workers=4: None,
        period=(10, 300, 10),
        name="x",
        workers=given,
    )
    assert shown.controls["period"].continuous_update is False
    assert shown.controls["name"].continuous_update is False
    assert shown.controls["workers"] is given
    assert given.continuous_update is True


class Rich:
    """A value with an HTML and a PNG representation (as a frame and a figure have)."""

    def _repr_html_(self) -> str:
        return "<b>rich</b>"

    def _repr_png_(self) -> bytes:
        return b"\x89PNG not really"


def test_a_rich_return_value_is_shown_by_its_representations_binary_as_base64(
    displayed: list[object],
) -> None:
    shown = interact(lambda size=1: Rich() if size else None, size=(0, 3))
    (output,) = shown.output.outputs
    assert output["output_type"] == "display_data"
    assert output["data"]["text/html"] == "<b>rich</b>"
    assert base64.b64decode(output["data"]["image/png"]) == b"\x89PNG not really"
    shown.controls["size"].value = 0  # returns None: nothing is shown
    assert shown.output.outputs == ()


def test_the_first_call_raises_and_a_later_failure_is_shown_then_replaced(
    displayed: list[object],
) -> None:
    def divide(by: int = 0) -> float:
        return 1 / by

    with pytest.raises(ZeroDivisionError):
        interact(divide, by=(0, 4))  # starts at the default, 0
    assert displayed == []  # nothing half-made is shown

    shown = interact(divide, by=ipywidgets.Dropdown(options=[4, 0, 2], value=4))
    assert shown.output.outputs[-1]["data"] == {"text/plain": "0.25"}
    shown.controls["by"].value = 0
    (error,) = shown.output.outputs
    assert error["output_type"] == "error"
    assert (error["ename"], error["evalue"]) == ("ZeroDivisionError", "division by zero")
    assert shown.result is None
    assert any("return 1 / by" in line for line in error["traceback"])
    assert not any("def update" in line or "self.function" in line for line in error["traceback"])
    shown.controls["by"].value = 2
    assert shown.output.outputs[-1]["data"] == {"text/plain": "0.5"}


def test_printed_errors_come_after_printed_text(displayed: list[object]) -> None:
    def both(flag: bool = True) -> None:
        print("out", flag)
        print("err", flag, file=sys.stderr)

    shown = interact(both, flag=True)
    assert [(o["name"], o["text"]) for o in shown.output.outputs] == [
        ("stdout", "out True\n"),
        ("stderr", "err True\n"),
    ]
    assert isinstance(shown, Interaction) and repr(shown) == "Interaction(both, controls=['flag'])"


@pytest.mark.parametrize(
    ("controls", "message"),
    [
        (lambda: {"periode": (1, 5)}, "pick has no parameter 'periode'; it takes"),
        (lambda: {"period": object()}, "no control can be made for 'period' from <object"),
        (lambda: {"period": ipywidgets.Button()}, "the control of 'period', Button"),
    ],
)
def test_bad_controls_are_refused_by_name(
    displayed: list[object], controls: Callable[[], dict[str, object]], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        interact(pick, **controls())
    assert displayed == []


def test_a_parameter_without_default_needs_a_control(displayed: list[object]) -> None:
    def needs(first: int, second: int = 2) -> int:
        return first + second

    with pytest.raises(ValidationError, match="'first' has no default and no control"):
        interact(needs, second=(0, 4))
    assert interact(needs, first=(0, 4)).result == 4  # second keeps its default
    with pytest.raises(ValidationError, match="interact needs a function, not 3"):
        interact(3)  # type: ignore[arg-type]


def test_without_ipywidgets_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    with pytest.raises(ImportError, match=r"lldsched\[views\]"):
        interact_module.interact(pick, period=(1, 5))


def test_without_the_views_extra_at_all_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ipywidgets and no IPython (ipywidgets brings it): a script without the views
    extra is told which extra to install, not that IPython is missing."""
    for name in ("ipywidgets", "IPython", "IPython.display"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"lldsched\[views\]"):
        interact_module.interact(pick, period=(1, 5))


def test_a_change_off_the_kernels_thread_calls_the_function_on_it_once_latest_values_first(
    displayed: list[object],
) -> None:
    """JupyterLab 4.4+ sends widget messages on a kernel subshell, which ipykernel 7
    handles on a thread of its own: a change made there calls the function on the thread
    of the kernel's event loop (between cells), once for the changes made until it runs,
    with their latest values."""
    calls: list[tuple[int, int]] = []

    def record(x: int = 0) -> None:
        calls.append((x, threading.get_ident()))

    async def in_a_kernel() -> None:  # the loop on this thread plays the kernel's
        shown = Interaction(record, {"x": (0, 10)})
        calls.clear()

        def subshell() -> None:
            for value in (1, 2, 3):
                shown.controls["x"].value = value

        thread = threading.Thread(target=subshell)
        thread.start()
        thread.join()  # the loop is held meanwhile, as by a running cell
        assert calls == []  # nothing ran on the subshell's thread
        for _ in range(10):  # the call was handed to the loop: its next turns run it
            if calls:
                break
            await asyncio.sleep(0)
        assert calls == [(3, threading.get_ident())]
        shown.controls["x"].value = 4  # on the loop's own thread: at once, as in a cell
        assert calls[-1] == (4, threading.get_ident())

    asyncio.run(in_a_kernel())


class KernelPublisher:
    """A kernel's display publisher: ipykernel sets each dispatched message's parent."""

    def __init__(self) -> None:
        self.parents: list[object] = []

    def set_parent(self, parent: object) -> None:
        self.parents.append(parent)


def test_the_kernel_can_set_a_parent_on_its_publisher_while_the_function_runs(
    displayed: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ipykernel 7 sets the parent of every message it dispatches, on any of its threads,
    through the shell's display publisher of the moment: during the call that is the
    capture's, and IPython's capturing publisher has no ``set_parent``: the dispatch
    failed, its message was lost, and the page held back every later change of that
    control.  The capture's publisher passes it on to the kernel's."""
    kernels = KernelPublisher()
    shell = SimpleNamespace(display_pub=kernels)  # the kernel's shell, as IPython's is found
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    monkeypatch.setattr("IPython.core.getipython.get_ipython", lambda: shell)

    def dispatched_meanwhile(x: int = 0) -> None:
        shell.display_pub.set_parent({"msg_id": f"comm-{x}"})  # as another thread does
        print("ran", x)

    shown = Interaction(dispatched_meanwhile, {"x": (0, 3)})
    shown.controls["x"].value = 2
    assert kernels.parents == [{"msg_id": "comm-0"}, {"msg_id": "comm-2"}]
    assert shell.display_pub is kernels  # given back after each call
    assert shown.output.outputs == ({"output_type": "stream", "name": "stdout", "text": "ran 2\n"},)


DRAW = """\
from lldsched.views.interact import interact

class Shown:
    def __init__(self, x):
        self.x = x
    def _repr_html_(self):
        if self.x == 1:
            raise ValueError("its html broke")
        return f"<b>shown {self.x}</b>"

def draw(x=0):
    if x == 2:
        raise ZeroDivisionError("x is 2")
    return Shown(x)
"""
"""A function whose call raises at 2 (line 13 of its cell), and whose return value's
HTML raises at 1 (IPython catches that one): shared with the browser's test."""

LATER_CALLS = f"{DRAW}\nimport threading\n\nshown = interact(draw, x=(0, 5))"


def test_a_later_call_that_raises_shows_once_in_the_box_as_a_cells_error_in_a_kernel() -> None:
    """In a real kernel, a change made off the kernel's thread (a JupyterLab subshell's) is
    called between cells.  A return value whose ``_repr_html_`` raised: IPython shows that
    through the shell's ``showtraceback``, which sent it to the page under the cell that
    ran last (a cell below the controls), not the box.  It is in the box now, once, in
    its place; and a function that raised reads as a cell's error does (IPython's
    traceback: "Cell In[1], line 13"), as ``ipywidgets.interact`` shows it."""
    from jupyter_client.manager import start_new_kernel

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    manager, client = start_new_kernel(kernel_name="python3", env=env)
    heard: list[dict[str, Any]] = []

    def run(code: str) -> None:
        request = client.execute(code)
        while True:
            message = client.get_iopub_msg(timeout=60)
            heard.append(message)
            state = message["content"].get("execution_state")
            if state == "idle" and message["parent_header"].get("msg_id") == request:
                return

    def box() -> list[dict[str, Any]]:
        request = client.execute("import json; print(json.dumps(shown.output.outputs))")
        reply = ""
        while True:
            message = client.get_iopub_msg(timeout=60)
            if message["parent_header"].get("msg_id") != request:
                continue
            if message["header"]["msg_type"] == "stream":
                reply += message["content"]["text"]
            if message["content"].get("execution_state") == "idle":
                return list(json.loads(reply))

    try:
        run(LATER_CALLS)
        for value, raised in ((1, "ValueError"), (2, "ZeroDivisionError")):
            # a change on a thread of its own, as a subshell's; then a cell after it
            run(f"changing = threading.Thread(target=setattr, args=(shown.controls['x'], "
                f"'value', {value})); changing.start(); changing.join()")  # fmt: skip
            run("print('a cell after it')")
            for _ in range(50):  # the loop runs the call between cells: soon, or now
                outputs = box()
                if any(output.get("ename") == raised for output in outputs):
                    break
            errors = [output for output in outputs if output["output_type"] == "error"]
            assert len(errors) == 1, outputs
            (error,) = errors
            if value == 1:
                assert (error["ename"], error["evalue"]) == ("ValueError", "its html broke")
                assert outputs[-1]["data"]["text/plain"].startswith("<__main__.Shown")
            else:
                assert (error["ename"], error["evalue"]) == ("ZeroDivisionError", "x is 2")
                assert outputs == [error]
                text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(error["traceback"]))  # colours
                assert re.search(r"Cell In\[\d+\], line 13, in draw", text), text
                assert 'raise ZeroDivisionError("x is 2")' in text
        sent = [m for m in heard if m["header"]["msg_type"] in ("error", "stream")]
        assert [m["header"]["msg_type"] for m in sent] == ["stream", "stream"], sent  # the prints
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
