"""rig - what needs root: the namespace lab (netns, the one builder), FRR bfdd (frr), the engine
(engine), tcpdump (capture), stress-ng and SCHED_DEADLINE shields (stress), the host steal
sampler (steal), floods and live frames (flood, livegen), and the registry of what a run
started (registry).
"""
