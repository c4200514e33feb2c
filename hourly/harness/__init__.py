"""What hourly runs inside a benchmark's own process, beside the public harnesses
(:mod:`hourly.jaxbench`, :mod:`hourly.jaxbench_phases`): the device tracer (:mod:`.trace`,
``python -m hourly.harness.trace``) and the front-end profiler (:mod:`.frontend_profile`,
``python -m hourly.harness.frontend_profile``). They import nothing of hourly's but the harnesses."""
