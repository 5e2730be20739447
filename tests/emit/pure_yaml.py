"""The reference the block writer (router/emit/k8s/yamlio.py) is held to: PyYAML's pure-Python
SafeDumper with the writer's two rules (no aliases; the string styles of _represent_str) and
the options dump_documents passes, without the C emitter or the representer shortcut."""

from __future__ import annotations

from typing import Any

import yaml

from router.emit.k8s import yamlio


class Pure(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


Pure.add_representer(str, yamlio._represent_str)


def pure_dump(docs: list[Any]) -> str:
    text: str = yaml.dump_all(docs, Dumper=Pure, explicit_start=True, **yamlio._OPTIONS)
    return text
