"""Views: what a run looks like to a person.

:mod:`~lldsched.views.report` (text summaries, standard library only),
:mod:`~lldsched.views.frames` (pandas), :mod:`~lldsched.views.plots`
(matplotlib) and :mod:`~lldsched.views.widgets` (ipywidgets).  Each is typed
against the runtime protocols of :mod:`lldsched.runtime`, never a concrete
runtime, and each third-party import fails with an error naming the extra to
install.  Nothing here is imported by ``import lldsched``.
"""
