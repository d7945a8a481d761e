"""Safe YAML reading: multi-document, duplicate keys refused, Python tags refused.

Aliases are bounded too: a few hundred bytes of nested ``*alias`` references expand to
billions of nodes the moment anything walks the document (validation, ``repr``, JSON), so a
document whose expanded size passes :data:`MAX_EXPANDED_SIZE` is refused right after it is
read, as is a recursive alias.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from mas.runtime.errors import ManifestError, Problem
from mas.runtime.paths import UnreadableFileError, read_regular

MAX_FILE_BYTES = 16 << 20
"""Largest YAML file read (16 MiB): a manifest, overlay, experiment or config is small."""

MAX_EXPANDED_SIZE = 10_000_000
"""Largest expanded document accepted: nodes plus string characters, aliases followed.

A file without aliases never expands beyond about twice its own length, so the limit is
this or twice the file's length, whichever is larger.
"""

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    """SafeLoader that refuses duplicate mapping keys instead of keeping the last one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                mark = key_node.start_mark
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping
)


def read_yaml_documents(path: str | Path, text: str | None = None) -> list[Any]:
    """Every document of a YAML file, loaded safely.

    :param path: the file; also used as the source name in errors.
    :param text: the content, when already read (``path`` is then only a name).
    :raises ManifestError: unreadable file, malformed YAML, a Python tag, a duplicate key,
        or no document at all.
    """
    source = str(path)
    if text is None:
        try:
            text = read_regular(Path(path), MAX_FILE_BYTES).decode("utf-8")
        except UnreadableFileError as exc:
            raise ManifestError([Problem(source, "", _unreadable(exc.reason))]) from None
        except OSError as exc:
            raise ManifestError([Problem(source, "", f"cannot read file: {exc.strerror}")]) from exc
        except UnicodeDecodeError as exc:
            raise ManifestError([Problem(source, "", f"cannot read file: {exc}")]) from exc
    try:
        documents = [doc for doc in yaml.load_all(text, Loader=_StrictLoader) if doc is not None]
    except yaml.MarkedYAMLError as exc:
        raise ManifestError([Problem(source, _where(exc), _yaml_message(exc))]) from exc
    except yaml.YAMLError as exc:
        raise ManifestError([Problem(source, "", f"invalid YAML: {exc}")]) from exc
    limit = max(MAX_EXPANDED_SIZE, 2 * len(text))
    for number, document in enumerate(documents, 1):
        problem = _expansion_problem(document, limit)
        if problem:
            where = f"document {number}" if len(documents) > 1 else ""
            raise ManifestError([Problem(source, where, problem)])
    if not documents:
        raise ManifestError(
            [
                Problem(
                    source,
                    "",
                    "file is empty: expected a manifest (apiVersion, kind, metadata, spec) "
                    "or an experiment:",
                )
            ]
        )
    return documents


def _unreadable(reason: str) -> str:
    # Why a manifest is not read at all, in a manifest's words: a device, a pipe, too big.
    if reason.startswith("not a regular file"):
        return "not a regular file (a manifest is a YAML file)"
    if reason.startswith("too large"):
        return f"file {reason.replace('too large', 'too large for a manifest', 1)}"
    return reason


def _expansion_problem(document: Any, limit: int) -> str:
    """Why ``document`` is refused (``""``: it is not): too large once aliases are followed.

    Walks the object graph once per distinct container (shared subtrees are sized once), so
    the check itself stays linear in what was actually parsed.
    """
    sizes: dict[int, int] = {}
    ancestors: set[int] = set()
    stack: list[tuple[Any, bool]] = [(document, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            ancestors.discard(key)
            sizes[key] = 1 + sum(_weight(child, sizes) for child in _children(node))
            if sizes[key] > limit:
                return (
                    f"document too large once its aliases are expanded (more than {limit:,} "
                    "nodes and characters); write the repeated parts out or use fewer aliases"
                )
            continue
        if key in sizes:
            continue
        if key in ancestors:
            return "recursive alias: a node refers to itself through an *alias"
        ancestors.add(key)
        stack.append((node, True))
        stack.extend(
            (child, False)
            for child in _children(node)
            if isinstance(child, (dict, list)) and id(child) not in sizes
        )
    return ""


def _children(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return [*node.keys(), *node.values()]
    return list(node) if isinstance(node, list) else []


def _weight(child: Any, sizes: dict[int, int]) -> int:
    if isinstance(child, (dict, list)):
        return sizes[id(child)]
    return 1 + len(child) if isinstance(child, (str, bytes)) else 1


def _where(exc: yaml.MarkedYAMLError) -> str:
    mark = exc.problem_mark or exc.context_mark
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""


def _yaml_message(exc: yaml.MarkedYAMLError) -> str:
    problem = exc.problem or "invalid YAML"
    if "could not determine a constructor for the tag" in problem:
        tag = problem.rsplit("tag", 1)[-1].strip(" '")
        return f"YAML tag {tag} is not allowed (only plain YAML is loaded)"
    context = f" {exc.context}" if exc.context and "duplicate" not in problem else ""
    return f"invalid YAML: {problem}{context}"
