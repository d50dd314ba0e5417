"""Widgets: live control of a running scheduler, and a player over a simulation.

The notebooks' import path for both: :class:`~lldsched.views.panel.ControlPanel` (a
live table of a running scheduler's tasks with their verbs, :mod:`lldsched.views.panel`)
and :class:`~lldsched.views.player.SimulationPlayer` (a simulation stepped by hand,
:mod:`lldsched.views.player`); what they share is :mod:`lldsched.views.widgetkit`.
ipywidgets is imported only when one is made (and matplotlib and pandas only for the
player's chart).  Where widgets cannot render (a plain terminal, ``print``, nbconvert
to text), both read as text: :meth:`ControlPanel.to_text
<lldsched.views.panel.ControlPanel.to_text>` and :meth:`SimulationPlayer.to_text
<lldsched.views.player.SimulationPlayer.to_text>`.
"""

from __future__ import annotations

from lldsched.views.panel import COLUMNS, MAX_ROWS, ControlPanel
from lldsched.views.player import MAX_TYPED_RUN, SimulationPlayer
from lldsched.views.widgetkit import require_ipywidgets

__all__ = [
    "COLUMNS",
    "MAX_ROWS",
    "MAX_TYPED_RUN",
    "ControlPanel",
    "SimulationPlayer",
    "require_ipywidgets",
]
