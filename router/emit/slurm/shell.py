"""Shell text from user data: quoted words, comments, checked #SBATCH values.

Every body word is quoted, with `$'...'` escapes for control characters, so no user string can
put a newline, a directive or a command into a script. A `Raw` word is shell that router itself
writes (`"$head_node"`): it is the only thing left unquoted, and never holds user text.
"""

from __future__ import annotations

import re
import shlex

from router.errors import PlanError
from router.models.fields import SBATCH_SAFE

# Characters sbatch's #SBATCH parser and a shell both take literally: no space, quote, '#',
# '%' (a filename pattern), '$' or backslash.
SAFE = SBATCH_SAFE  # `router check` applies the same (models.fields)
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}  # $'...' escapes a reader knows


class Raw(str):
    """A shell word router wrote (a variable expansion), put in the script as it is."""


def directive(workload: str, flag: str, value: object, charset: re.Pattern[str] = SAFE) -> str:
    """`--flag=value` for an #SBATCH line; PlanError when the value has unsafe characters."""
    text = str(value)
    if not charset.fullmatch(text):
        raise PlanError(
            f"workload {workload}: {flag} value {text!r} has characters that are not safe in an"
            " #SBATCH line (allowed: letters, digits and . _ , : @ + = / -)"
        )
    return f"--{flag}={text}"


def words(argv: list[str]) -> str:
    """A command line: Raw words as written, the others quoted."""
    return " ".join([w if isinstance(w, Raw) else quote(w) for w in argv])


_QUOTED: dict[str, str] = {}  # word -> quoted: scripts repeat the same few words 100k times


def quote(word: str) -> str:
    """A shell word for `word`, on one line: control characters become $'\\xHH' escapes."""
    quoted = _QUOTED.get(word)
    if quoted is None:
        quoted = _quote(word)
        if len(_QUOTED) >= 1 << 16:
            _QUOTED.clear()
        _QUOTED[word] = quoted
    return quoted


def _quote(word: str) -> str:
    if "\x00" in word:
        raise PlanError(f"a NUL character cannot be passed to a program: {word!r}")
    try:
        word.encode()
    except UnicodeEncodeError:
        raise PlanError(f"text that is not valid Unicode cannot be written: {word!r}") from None
    if word.isprintable():  # str.isprintable: the same test per character, in C
        return shlex.quote(word)
    parts: list[str] = []
    for ch in word:
        if ch in "\\'":
            parts.append("\\" + ch)
        elif ch.isprintable():
            parts.append(ch)
        elif ch in _NAMED:
            parts.append(_NAMED[ch])
        else:  # the UTF-8 bytes, so the result does not depend on the job's locale
            parts.extend(f"\\x{b:02x}" for b in ch.encode())
    return "$'" + "".join(parts) + "'"


def comment(text: str) -> str:
    """A comment line from user data: printable ASCII only, so it stays one comment line."""
    return "# " + _NOT_PRINTABLE_ASCII.sub("?", text[:200])


_NOT_PRINTABLE_ASCII = re.compile(r"[^ -~]")
