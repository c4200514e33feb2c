"""The names of hourly's own build commands (``--build-cmd`` / ``--jax-build-cmd``), apart from
the settings so that modules the settings use (hourly.measure.pinned) can read them without an
import circle."""

#: the built-in build of the pure-Python jax package: ``python -m pip wheel --no-deps
#: --no-build-isolation`` of the checkout into a wheel folder of hourly's own
PIP_WHEEL = "pip-wheel"
#: a build command meaning "nothing to build: the tree is installed editable, a checkout is all it takes"
NO_BUILD = "none"
