"""Version profiles: where RocketMQ 4.x releases differ, a spec decision takes the profile it describes."""

from __future__ import annotations

import attrs


def _parse(text: str) -> tuple[int, int, int]:
    parts = text.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"a RocketMQ version looks like 4.9.8, not {text!r}")
    major, minor, patch = (int(p) for p in parts)
    return (major, minor, patch)


@attrs.frozen(order=True)
class VersionProfile:
    """A RocketMQ release the spec describes, e.g. ``VersionProfile.of("4.9.3")``."""

    release: tuple[int, int, int]

    @classmethod
    def of(cls, text: str) -> VersionProfile:
        release = _parse(text)
        if release[0] != 4:
            raise ValueError(f"rocketspec specifies RocketMQ 4.x, not {text}")
        return cls(release)

    def at_least(self, text: str) -> bool:
        return self.release >= _parse(text)

    def __str__(self) -> str:
        return ".".join(str(p) for p in self.release)


V4_9_3 = VersionProfile.of("4.9.3")
V4_9_8 = VersionProfile.of("4.9.8")
DEFAULT_PROFILE = V4_9_8
