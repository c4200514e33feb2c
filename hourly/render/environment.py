"""The environment a measurement ran on (hourly.measure.machine.capture's record) as the report's
markdown lines."""

from __future__ import annotations

from hourly.text.privacy import redact_env


def environment_lines(info: dict, anonymous: bool = False) -> list[str]:
    """For a public issue: values of secret-looking variables redacted; ``anonymous``: no host name."""
    host = "" if anonymous else f"`{info.get('host')}` "
    lines = [f"- host: {host}({info.get('platform')})",
             f"- Python: `{info.get('python')}` {info.get('python_version', '')}"]
    origins = info.get("origins") or {}
    shadowed = set(info.get("shadowed") or [])
    for name, version in sorted(info.get("packages", {}).items()):
        where = origins.get(name) or {}
        line = f"- {name}: {version}"
        if where.get("location"):
            line += f" from `{where['location']}` ({where.get('via')})"
        if name in shadowed:
            line += " — shadowed: each state's own jax ran, installed into the workdir's overlay"
        lines.append(line)
    if "jax" in shadowed and "jax" not in info.get("packages", {}):
        lines.append("- jax: each state's own, installed into the workdir's overlay")
    if info.get("pythonpath"):
        lines.append("- PYTHONPATH: " + ", ".join(f"`{p}`" for p in info["pythonpath"]))
    gpus = info.get("gpus") or []
    lines.append(f"- GPU: {'; '.join(gpus) if gpus else 'none found (no nvidia-smi)'}")
    for k, v in sorted(redact_env(info.get("env", {})).items()):
        lines.append(f"- `{k}={v}`")
    return lines
