"""A shell at any state: ``state`` (which pair ``hourly shell STATE`` names: a time, a pair, a side
of a stored step, a probe of a stored bisection) and ``run`` (that state built or reused, installed
into its own environment, the trees held at it while a subshell or one command runs)."""
