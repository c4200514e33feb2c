"""hourly: find the JAX or XLA commit that made a program slower or made it crash."""

__version__ = "0.1.0"
