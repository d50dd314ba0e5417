"""Whether this process will be forked without Python's fork hooks: uWSGI's master.

The package's after-fork handling (the refusal of a scheduler made before a fork,
:mod:`lldsched.threaded.forked`; of a store opened before one,
:mod:`lldsched.stores.forks`; the file claim's and write gate's let-go) runs from
:func:`os.register_at_fork`.  uWSGI forks its workers in C and runs those hooks only
with ``py-call-osafterfork = true``, so without it none of that happens in a worker:
each scheduler made and each durable store opened where uWSGI will fork says so, once,
through :func:`uwsgi_forks_unhooked`, the one test both share.  Outside uWSGI it is
one dictionary look-up (the ``uwsgi`` module is there only inside uWSGI).
"""

from __future__ import annotations

import sys

from lldsched.errors import doc_url

__all__ = ["UWSGI_SETTINGS", "uwsgi_forks_unhooked"]

UWSGI_SETTINGS = (
    "Set lazy-apps = true (the application made in each worker) or "
    "py-call-osafterfork = true (the copy then refuses every call); "
    + doc_url("docs/OPERATIONS.md#in-a-web-application")
)
"""The two settings that answer it, as every such warning ends."""


def uwsgi_forks_unhooked() -> bool:
    """Whether uWSGI will fork its workers from this process without running Python's
    fork hooks: the ``uwsgi`` module is there (uWSGI's Python plugin provides it, only
    inside uWSGI), this is its master before the workers (``uwsgi.worker_id()`` is 0,
    with a master or more than one process: what uWSGI 2.0.31 said at import under each
    command line), and ``py-call-osafterfork`` is not set.  A ``uwsgi`` module that does
    not say (no ``opt``, no ``worker_id``): False, nothing to tell."""
    uwsgi = sys.modules.get("uwsgi")
    if uwsgi is None:
        return False
    try:
        options, forks = uwsgi.opt, uwsgi.worker_id() == 0
        forks = forks and bool(options.get("master") or uwsgi.numproc > 1)
        hooked = bool(options.get("py-call-osafterfork"))
    except (AttributeError, TypeError):
        return False
    return forks and not hooked
