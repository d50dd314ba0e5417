"""Serving the shipped notebooks to a real browser: Voila (a notebook runs as an app) and
JupyterLab (Lab's own "run all cells" command runs it), on loopback, in a copy of
``notebooks/`` so nothing the servers write lands in the repository.  Debian's Chromium
(``/usr/bin/chromium``, which the Makefile installs) is driven by Playwright."""

from __future__ import annotations

import http.cookiejar
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, NamedTuple, overload

ROOT = Path(__file__).resolve().parent.parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
SERVER_NAMES = ("jupyterlab", "voila")
SCREENSHOTS = os.environ.get("LLDSCHED_SCREENSHOTS")
"""A directory to save the tests' screenshots in (to look at them); unset: none saved."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tool(name: str) -> str:
    found = shutil.which(name, path=os.path.dirname(sys.executable))
    assert found is not None, f"{name} is not installed (see pyproject's extras)"
    return found


JS_POLL_MS = 100
"""How often a wait on the page (``page.wait_for_function``) tests its condition.
Playwright's default tests it on every animation frame, which keeps a headless page
drawing sixty frames a second: on an idle Lab page, 0.9 s of Chromium's CPU per 10 s of
waiting against 0.2-0.3 s tested every 100 ms (2026-12-07, at a load of 18), taken from
the page being waited on while it loads (its ``"mutation"`` polling is gone from
Playwright 1.65)."""


KERNEL_READY = """() => {
    const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext && panel.sessionContext.session
        && panel.sessionContext.session.kernel;
    return !!kernel && kernel.connectionStatus === "connected" && kernel.status === "idle";
}"""


LISTEN = """() => {
    // What the page hears from the notebook's kernel: per execute request (by its cell's
    // id) the messages that came back for it, and how many of the kernel's iopub
    // messages the page received and how many it has handled (Lab handles them one at a
    // time, in order: one whose handling never ends holds back every later one).
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    const heard = {byCell: {}, byId: {}, received: 0, handled: 0, last: Date.now(),
        lastType: "nothing"};
    window.lldschedHeard = heard;
    kernel.anyMessage.connect((_, {msg, direction}) => {
        let type = msg.header.msg_type;
        if (type === "status") {
            type += " " + msg.content.execution_state;
        }
        if (direction === "send") {
            if (type === "execute_request") {
                const request = {sent: Date.now(), heard: [], idle: false};
                heard.byCell[msg.metadata.cellId] = request;
                heard.byId[msg.header.msg_id] = request;
            }
            return;
        }
        heard.received += msg.channel === "iopub" ? 1 : 0;
        heard.last = Date.now();
        heard.lastType = type;
        const request = heard.byId[msg.parent_header && msg.parent_header.msg_id];
        if (request) {
            const said = request.heard;
            const previous = said[said.length - 1];
            if (previous && previous.type === type) {
                previous.times += 1;
            } else {
                said.push({type, times: 1});
            }
            request.idle = request.idle || type === "status idle";
        }
    });
    kernel.iopubMessage.connect(() => {
        heard.handled += 1;
        heard.last = Date.now();
    });
}"""
RUN_ALL = f"""() => {{
    window.lldschedRanAll = null;
    window.lldschedCleared = false;
    ({LISTEN})();
    const commands = window.jupyterapp.commands;
    commands.execute("notebook:clear-all-cell-outputs")
        .then(() => {{
            window.lldschedCleared = true;
            return commands.execute("notebook:run-all-cells");
        }})
        .then(
            (ran) => {{ window.lldschedRanAll = String(ran); }},
            (error) => {{ window.lldschedRanAll = "failed: " + error; }});
}}"""
RAN_ALL = """() => {
    if (window.lldschedRanAll !== null) {
        return true;
    }
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    if (!window.lldschedCleared || !kernel || kernel.status !== "idle") {
        return false;
    }
    const code = panel.content.widgets.filter((cell) => cell.model.type === "code");
    return code.length > 0 && code.every((cell) => cell.model.executionCount !== null);
}"""
COUNTED = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    if (!window.lldschedCleared || !panel) {
        return -1;
    }
    const code = panel.content.widgets.filter((cell) => cell.model.type === "code");
    return code.filter((cell) => cell.model.executionCount !== null).length;
}"""
UNFINISHED = """() => {
    // The first code cell without a count, and what the page heard for its request.
    const code = window.jupyterapp.shell.currentWidget.content.widgets
        .filter((cell) => cell.model.type === "code");
    const index = code.findIndex((cell) => cell.model.executionCount === null);
    if (index < 0) {
        return null;
    }
    const cell = code[index];
    const request = window.lldschedHeard.byCell[cell.model.sharedModel.getId()] || null;
    return {index, cell, request, source: cell.model.sharedModel.getSource()};
}"""
OVER = f"""(silent) => {{
    // Why the run is visibly over, or null: the page has heard nothing from the kernel
    // (and handled nothing) for `silent` seconds, and the first code cell still without
    // a count is not running in the kernel (the kernel said it is idle after the cell's
    // request, or said nothing of it at all: the cells before it are done, and a kernel
    // starts the next request at once), or the page has left a message unhandled.
    const heard = window.lldschedHeard;
    const unfinished = window.lldschedCleared && ({UNFINISHED})();
    if (!unfinished || Date.now() - heard.last < silent * 1000) {{
        return null;
    }}
    if (heard.received > heard.handled) {{
        return "the page has not handled the kernel's last messages";
    }}
    const request = unfinished.request;
    if (!request) {{
        return "the page sent no execute request for the cell";
    }}
    if (request.idle) {{
        return "the kernel said it was idle after the cell's request";
    }}
    if (request.heard.length === 0) {{
        return "the kernel said nothing of the cell's request";
    }}
    return null;  // a cell running in silence: a long cell, waited for
}}"""
RAN_ALL_MOVED_OR_OVER = f"""([counted, silent]) => ({RAN_ALL})() || ({COUNTED})() !== counted
    || ({OVER})(silent)"""
HEARD = f"""() => {{
    const heard = window.lldschedHeard;
    const unfinished = ({UNFINISHED})();
    const ago = (then) => `${{((Date.now() - then) / 1000).toFixed(1)}} s ago`;
    let said = `the page handled ${{heard.handled}} of the ${{heard.received}} iopub messages `
        + `it received; the last message it heard (${{heard.lastType}}) came ${{ago(heard.last)}}`;
    if (unfinished) {{
        const request = unfinished.request;
        const first = unfinished.source.split("\\n")[0].slice(0, 60);
        const replies = request && request.heard.map(
            (m) => m.times > 1 ? `${{m.type}} x${{m.times}}` : m.type).join(", ");
        const state = unfinished.cell.model.executionState;
        said = `code cell ${{unfinished.index + 1}} (${{first}}) is ${{state}}: `
            + (request ? `its request went ${{ago(request.sent)}}, and the page heard for it: `
                + (replies || "nothing") : "no request was sent for it") + "; " + said;
    }}
    return said;
}}"""
PENDING = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
    const code = panel.content.widgets.filter((cell) => cell.model.type === "code");
    const running = code.filter((cell) => cell.model.executionState === "running");
    return `kernel ${kernel ? kernel.connectionStatus + "/" + kernel.status : "none"}, `
        + `${running.length} of ${code.length} cells pending`;
}"""
STALL_SECONDS = 120
"""The longest JupyterLab's run-all may go without a code cell finishing (or, the cells
all run, without the run being over): longer is a hang.  Measured at a load of 9-11 on
two cores, the longest wait between two cells finishing was 7.5 s (09, whose run-all
took 33 s; 04's 3.1 s of 14 s)."""
SILENT_SECONDS = 20
"""How long a run may sit with the kernel silent and no cell running in it before it is
over without waiting for :data:`STALL_SECONDS` (:data:`OVER` says when that is).  A
kernel starts the next queued request as soon as one ends: in 41 logged run-alls of 04
under loads of 8-17, the widest gap between a cell's idle and the next one's busy was
0.16 s, and the page's longest silence of any kind (a cell computing without output
included) 3.6 s.  20 s is far past what a live run shows, and a sixth of the stall's
bound."""


RUN_ALL_TEST_SECONDS = 600
"""pytest's timeout for a test that has JupyterLab run all of a notebook: the whole
test's last resort, never the failure a slow run meets first (the run-all's wait fails
on a stall, :data:`STALL_SECONDS`, and each later wait has a bound of its own, all of
them saying where the page stood)."""


def run_all_in_lab(page: Any, log: Sequence[str]) -> None:
    """JupyterLab opens the notebook without running it: once the notebook's kernel is
    connected and idle, run every cell through Lab's command registry (the app is
    exposed as ``window.jupyterapp`` by ``--LabApp.expose_app_in_browser``).  Clicking
    Run > Run All Cells as soon as the execution indicator showed idle left every
    cell unrun in 2 of 7 runs; the kernel's own connection state is what "ready" means.

    The run is waited for with a bound: once in about a dozen runs (2026-12-01) the
    command's promise never settled and the test hung until pytest's timeout, with
    nothing to say why; now the failure says where the kernel and the cells stood.
    It then failed once (2026-12-03) with the kernel idle and no cell pending: the
    cells had run and only the promise was missing.  So the outputs (and execution
    counts, which the shipped notebook carries) are cleared first, and the run is
    over when the promise settles or, without it, when the clearing is done, the
    kernel is idle and every code cell has a count again.

    The bound is on progress, not on the whole run: the run fails once no code cell
    has finished for :data:`STALL_SECONDS` (a cell, or the run's end, that hangs), and
    a run that goes on finishing cells is waited for, however loaded the machine (a
    bound of 180 s on the whole run failed under two test suites at once; 04's run
    takes 14 s and 09's 33 s at a load of 9-11).  The test's own timeout bounds the
    whole (:data:`RUN_ALL_TEST_SECONDS`).  A run that is visibly over before that
    (:data:`OVER`: the kernel silent for :data:`SILENT_SECONDS`, the unfinished cell
    not running in it) fails then.  Either failure says what the page heard for the
    first unfinished cell's request and whether it handled all it heard."""
    start_run_all(page)
    wait_for_run_all(page, log)


KERNEL_VALUES = """async (code) => {
    // What the kernel prints for `code`, or "no answer" after 30 s (a request lost).
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    let text = "";
    const future = kernel.requestExecute({code, store_history: false});
    future.onIOPub = (msg) => {
        if (msg.header.msg_type === "stream") { text += msg.content.text; }
    };
    const late = new Promise((resolve) => setTimeout(() => resolve("late"), 30000));
    return await Promise.race([future.done, late]) === "late" ? "no answer" : text.trim();
}"""


def start_run_all(page: Any) -> None:
    """The first half of :func:`run_all_in_lab`: once the kernel is ready, Run All is
    started (a test acts on the page while it runs, then waits for it)."""
    page.wait_for_function(KERNEL_READY, timeout=60_000, polling=JS_POLL_MS)
    page.evaluate(RUN_ALL)


def wait_for_run_all(page: Any, log: Sequence[str]) -> None:
    """The second half of :func:`run_all_in_lab`: the run waited for, on progress."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    while not page.evaluate(RAN_ALL):
        counted = page.evaluate(COUNTED)
        try:
            page.wait_for_function(
                RAN_ALL_MOVED_OR_OVER, arg=[counted, SILENT_SECONDS],
                timeout=STALL_SECONDS * 1000, polling=500,
            )  # fmt: skip
        except PlaywrightTimeout:
            raise AssertionError(
                f"JupyterLab's run-all finished no cell in {STALL_SECONDS} s, at {counted} "
                f"cells run ({page.evaluate(PENDING)}); {page.evaluate(HEARD)}; "
                f"{where_it_stands(page, log)}"
            ) from None
        over = page.evaluate(OVER, SILENT_SECONDS)
        if over:
            raise AssertionError(
                f"JupyterLab's run-all stopped at {counted} cells run ({page.evaluate(PENDING)}): "
                f"{over}, and it has said nothing for {SILENT_SECONDS} s; "
                f"{page.evaluate(HEARD)}; {where_it_stands(page, log)}"
            )


def _command(server: str, target: Path, port: int, tmp_path: Path) -> list[str]:
    """Voila or Lab serves every notebook under the folder ``target``."""
    if server == "voila":
        return [tool("voila"), str(target), "--no-browser", f"--port={port}",
                "--Voila.ip=127.0.0.1"]  # fmt: skip
    return [tool("jupyter"), "lab", "--no-browser", f"--port={port}",
            "--ServerApp.ip=127.0.0.1", "--allow-root", "--IdentityProvider.token=",
            f"--ServerApp.root_dir={target}",
            "--LabApp.expose_app_in_browser=True",
            # A fresh Lab: no workspace restored from another session, no news pop-up.
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            f"--LabApp.user_settings_dir={_lab_settings(tmp_path / 'settings')}",
            # No search for language servers: none is installed, and none is used.
            "--LanguageServerManager.autodetect=False"]  # fmt: skip


def _lab_settings(directory: Path) -> Path:
    notification = directory / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    return directory


def _lab_page_config(directory: Path) -> Path:
    """A Jupyter config directory (for ``JUPYTER_CONFIG_PATH``) whose page config tells
    Lab's page not to check whether its extensions need a build: the check runs npm
    twice on the server (two seconds of wall time, under load more) on every page, and
    the tests build nothing."""
    labconfig = directory / "labconfig"
    labconfig.mkdir(parents=True)
    (labconfig / "page_config.json").write_text('{"buildCheck": false, "buildAvailable": false}')
    return directory


class Served(NamedTuple):
    """A notebook being served: the page's URL, what to do once the page is there (Lab:
    run all cells), and what the server has logged since the test began (for a failure's
    message, and for the tests that say nothing went to the log)."""

    url: str
    prepare: Callable[[Any], None]
    log: Sequence[str]


def where_it_stands(page: Any, log: Sequence[str], *, lines: int = 25) -> str:
    """What a failed wait saw: the page's load state and visible text (Voila shows
    "Executing N of M" while its kernel runs the notebook) and the server log's tail."""
    state = page.evaluate("() => document.readyState")
    shown = page.evaluate("() => document.body ? document.body.innerText : ''")
    text = " ".join(str(shown).split())
    return f"page {state!r}, showing: {text[:300]!r}\nserver log, last {lines} lines:\n" + "".join(
        log[-lines:]
    )


class LogSince(Sequence[str]):
    """What a server has logged from a line on (a test's start), as it grows."""

    def __init__(self, log: list[str], start: int) -> None:
        self._log = log
        self._start = start

    def __len__(self) -> int:
        return len(self._log) - self._start

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        return self._log[self._start :][index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._log[self._start :])


KERNEL_STARTED = re.compile(r"Kernel started: ([0-9a-f-]{36})")
"""How JupyterLab and Voila log a kernel's start (its id)."""
_MARKS = itertools.count()


class Server:
    """Lab or Voila serving the folder ``target``, started in it, on a free port of
    loopback: started at once (the caller goes on while it imports), waited for when
    its :attr:`url` is first asked."""

    def __init__(self, kind: str, target: Path, tmp_path: Path) -> None:
        self.kind = kind
        port = free_port()
        path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        env = {**os.environ, "PYTHONPATH": path}  # the kernels import this checkout's lldsched
        if kind == "jupyterlab":  # its page config first, then any the caller has
            paths = [str(_lab_page_config(tmp_path / "config")), env.get("JUPYTER_CONFIG_PATH")]
            env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(path for path in paths if path)
        self._process = subprocess.Popen(
            _command(kind, target, port, tmp_path), cwd=target, env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._port = port
        self._url = f"http://127.0.0.1:{port}/"
        self._ready = False  # it logged its URL
        self._listening = False
        self._lines = threading.Condition()  # notified at each line logged
        self.log: list[str] = []
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:  # the server logs its URL once it serves; no polling needed
        assert self._process.stderr is not None
        # Closed at its end: left to the collector, the pipe is a ResourceWarning, an
        # error of the suite (docs/TESTING.md, "What fails a test besides its assertions").
        with self._process.stderr as stderr:
            for line in stderr:
                with self._lines:
                    self.log.append(line)
                    self._ready = self._ready or self._url in line
                    self._lines.notify_all()

    def _wait_for(self, logged: Callable[[], bool], seconds: float) -> bool:
        with self._lines:
            return self._lines.wait_for(logged, seconds)

    @property
    def url(self) -> str:
        """Its base URL, once it serves (or it failed to start within 60 s).  Jupyter's
        server logs its URL just before its loop starts listening on the port (a
        callback of the loop): a request at once was refused, so the port is tried
        until it takes a connection (a few milliseconds after the line)."""
        if not self._listening:
            started = self._wait_for(lambda: self._ready, 60)
            assert started, f"{self.kind} did not start within 60 s:\n" + "".join(self.log)
            deadline = time.monotonic() + 60
            while not self._listening:
                try:
                    socket.create_connection(("127.0.0.1", self._port), timeout=30).close()
                    self._listening = True
                except ConnectionRefusedError:
                    alive = self._process.poll() is None and time.monotonic() < deadline
                    assert alive, f"{self.kind} does not listen:\n" + "".join(self.log)
                    time.sleep(0.02)  # a bounded poll: nothing says when the port opens
        return self._url

    def log_from_here(self) -> LogSince:
        """What it logs from now on.  A request of a name of its own, which the server
        logs (a 404), marks where: all a kernel of an earlier test wrote to the
        server's error stream before it exited (a traceback of its shutdown, say) comes
        before the mark, and is none of this test's."""
        mark = f"lldsched-log-mark-{next(_MARKS)}"
        start = len(self.log)
        try:
            urllib.request.urlopen(f"{self.url}{mark}", timeout=30).close()
        except urllib.error.HTTPError as answer:
            answer.close()
        marked = self._wait_for(lambda: any(mark in line for line in self.log[start:]), 30)
        assert marked, f"{self.kind} did not log a request for {mark}:\n" + "".join(self.log)
        return LogSince(
            self.log, next(n for n in range(start, len(self.log)) if mark in self.log[n]) + 1
        )

    def shut_down_kernels(self, folder: str, log: Sequence[str]) -> None:
        """Shut down the kernels of the notebooks under ``folder`` (Lab) or started in
        ``log`` (Voila, whose page shuts its kernel down on leaving, which closing a
        browser context does not do), and wait for it.  A request that changes
        anything needs the server's XSRF cookie, which a page of it sets, sent back."""
        cookies = http.cookiejar.CookieJar()
        server = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cookies))
        server.open(self.url + ("lab" if self.kind == "jupyterlab" else ""), timeout=30).close()
        xsrf = {"X-XSRFToken": str({cookie.name: cookie.value for cookie in cookies}["_xsrf"])}
        if self.kind == "voila":
            kernels = [found[1] for line in log if (found := KERNEL_STARTED.search(line))]
            gone = [
                urllib.request.Request(
                    f"{self.url}voila/api/shutdown/{kernel}", method="POST", headers=xsrf
                )
                for kernel in kernels
            ]
        else:
            with server.open(f"{self.url}api/sessions", timeout=30) as answer:
                sessions = json.load(answer)
            gone = [
                urllib.request.Request(
                    f"{self.url}api/sessions/{session['id']}", method="DELETE", headers=xsrf
                )
                for session in sessions
                if session["path"].startswith(f"{folder}/")
            ]
        for request in gone:
            server.open(request, timeout=60).close()

    @property
    def stopped(self) -> bool:
        """Whether its process has ended."""
        return self._process.poll() is not None

    def stop(self) -> None:
        """Ask it to stop (it shuts down what kernels it still has); :meth:`wait` for it."""
        self._process.terminate()

    def wait(self) -> None:
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


class SharedServers:
    """A JupyterLab and a Voila server for the browser tests of a session (each
    pytest-xdist worker's: ``tests/browser/conftest.py``), each started by the first
    test that asks for it: a start costs several seconds of imports and extensions (Lab
    about 2.3 s of CPU, most of it jsonschema's IRI grammar), a stop the kernels'
    shutdown.  Sharing them is safe because nothing of a test stays in them: each test
    gets a folder of its own under the servers' root (a copy of its notebooks), in Lab a
    workspace of its own (nothing of another test's tabs is restored), a fresh kernel,
    shut down when it is done with it, and the servers' log from its own start on.
    Voila serves the folder (a notebook at ``voila/render/FOLDER/NAME.ipynb``, by the
    handler that serves a single notebook) and starts where a copy of the shipped
    ``notebooks/voila.json`` is, as ``cd notebooks && voila ...`` does."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.served = root / "served"  # the servers' root: a folder for each test
        self.served.mkdir()
        shutil.copy(ROOT / "notebooks" / "voila.json", self.served)
        self.tests = 0
        self._servers: dict[str, Server] = {}

    def server(self, kind: str) -> Server:
        """The server of ``kind`` (``SERVER_NAMES``), started if it is not yet."""
        if kind not in self._servers:
            (self.root / kind).mkdir()
            self._servers[kind] = Server(kind, self.served, self.root / kind)
        return self._servers[kind]

    def new_folder(self, notebooks: Path, name: str) -> str:
        """A folder of the test's own under the root: a copy of ``notebooks``."""
        self.tests += 1
        folder = f"test-{self.tests}"
        ignore = shutil.ignore_patterns("src", ".ipynb_checkpoints")
        shutil.copytree(notebooks, self.served / folder, ignore=ignore)
        assert (self.served / folder / f"{name}.ipynb").exists(), f"no notebook {name}"
        return folder

    def close(self) -> None:
        """Stop the servers, both at once (a Lab server's stop took seconds)."""
        for server in self._servers.values():
            server.stop()
        for server in self._servers.values():
            server.wait()


SHARED: SharedServers | None = None
"""The session's servers, if ``tests/browser/conftest.py`` set them up; None: each
:func:`served` starts a server of its own."""


@contextmanager
def served(
    server: str, name: str, tmp_path: Path, *, notebooks: Path = ROOT / "notebooks"
) -> Iterator[Served]:
    """Serve the notebook ``name`` of ``notebooks`` (the shipped ones unless given; a
    copy, so nothing the servers write lands there) with ``server``."""
    with ExitStack() as stack:
        shared = SHARED
        if shared is None:  # no session's servers: this test's own
            shared = SharedServers(tmp_path / "servers")
            stack.callback(shared.close)
        running = shared.server(server)
        folder = shared.new_folder(notebooks, name)
        log = running.log_from_here()
        stack.callback(running.shut_down_kernels, folder, log)
        if server == "voila":
            yield Served(f"{running.url}voila/render/{folder}/{name}.ipynb", lambda page: None, log)
        else:
            page = f"{running.url}lab/workspaces/{folder}/tree/{folder}/{name}.ipynb"
            yield Served(page, lambda page: run_all_in_lab(page, log), log)


BROWSER: Any = None
"""The test session's Chromium (``tests/browser/conftest.py`` launches it once, and each
test has a context of its own in it); None: :func:`browser_page` launches one."""


@contextmanager
def chromium() -> Iterator[Any]:
    """Headless Chromium, launched."""
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing: apt-get install chromium"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def browser_page() -> Iterator[Any]:
    """A fresh page in headless Chromium, in a context of its own (no cookies, storage or
    cache of another test's), in the session's browser (:data:`BROWSER`) if there is one."""
    with ExitStack() as stack:
        browser = BROWSER if BROWSER is not None else stack.enter_context(chromium())
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        stack.callback(context.close)
        yield context.new_page()


def screenshot(page: Any, name: str) -> None:
    """Save a screenshot of the page as ``name``.png in :data:`SCREENSHOTS`, if set."""
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=False)
