"""judge - reads a run folder and never needs root: the one bfdcap client (bfdcap), the
validity rules as pure functions (validity, episodes, assess), figures, verdicts, the one
summary for every kind of run (summarise), rendering (render, render_ladder), gate, baseline
and plots.
"""
