"""Red teaming: a built-in attack library (plugins x strategies) turned into ordinary
scenarios, and a summary of what the attacks found.

`plugins.py` holds the templated attacks and their detectors (checks, no model needed),
`strategies.py` how an attack is delivered, `attacks.py` the scenarios a `red_team`
scenario expands into, `summary.py` attack success rates and findings from a run's results.
"""

from sparring.redteam.attacks import ATTACK_TAG, attack_scenarios, expand_red_team
from sparring.redteam.summary import (
    RedTeamSummary,
    render_rates,
    render_summary,
    summarize,
    summary_dict,
)

__all__ = [
    "ATTACK_TAG",
    "RedTeamSummary",
    "attack_scenarios",
    "expand_red_team",
    "render_rates",
    "render_summary",
    "summarize",
    "summary_dict",
]
