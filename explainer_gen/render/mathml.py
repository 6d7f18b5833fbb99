"""Display math rendered to MathML at build time: no script, no CDN, read by screen readers.

latex2mathml reads a lot of invalid LaTeX without complaint: an unclosed brace is closed for you,
`\\frac{a}` becomes a fraction with no denominator, an unknown command is printed as its own name
and an unknown environment is dropped. So `to_mathml` reads the formula first, with latex2mathml's
own tokenizer, and refuses it with a ValueError naming the mistake and where it is in the formula.
"""
from __future__ import annotations

import difflib
import itertools
import re
from typing import NamedTuple

from latex2mathml import commands
from latex2mathml.converter import MOVABLE_LIMIT_TEXTS, OPERATORS, convert
from latex2mathml.symbols_parser import SYMBOLS
from latex2mathml.tokenizer import PATTERN
from pymdownx.superfences import SuperFencesException

from models.yamlsource import SourceError

from ..sources.markdown import MATH_FENCE_NAME
from .markup import esc


class MathError(ValueError):
    """A mistake in a formula; `line` is its 1-based line in the text given, when known."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.line = line


class _Token(NamedTuple):
    text: str      # as latex2mathml's tokenizer yields it
    start: int     # offset in the formula
    kind: str      # the tokenizer's alternative: command, escaped, char, begin_end, text_cmd, ...
    content: str = ""  # the braced text of \text{...} and its kin


class _Mistake(Exception):
    def __init__(self, what: str, token: _Token | None = None):
        super().__init__(what)
        self.what, self.token = what, token


# The tokenizer's alternatives, in its order; the others are parts of these.
_KINDS = ("comment", "letter", "subsup_operator", "dimension", "number", "dot_decimal", "escaped", "begin_end",
          "operatorname", "text_cmd", "frac_cmd", "math_font", "verb", "command", "char")
_PARTS = {"subsup_operator": ("subsup_operator", "subsup_digit"), "frac_cmd": ("frac_cmd", "frac_arg1", "frac_arg2"),
          "math_font": ("math_font", "math_open", "math_arg", "math_close")}


def _names(value) -> set[str]:
    """The control sequences named in `value`: a string, a collection, or a dict's keys and values."""
    if isinstance(value, str):
        return {value} if value.startswith("\\") and len(value) > 1 else set()
    if isinstance(value, dict):
        return _names(list(value)) | _names(list(value.values()))
    if isinstance(value, (tuple, list, set, frozenset)):
        return set().union(set(), *(_names(v) for v in value))
    return set()


# Every control sequence latex2mathml defines: its symbol table, its command names, and `\of`,
# which only its walker names. `\math` is the prefix of the font commands, not a command.
_KNOWN = ({k for k in SYMBOLS if k.startswith("\\")} | _names(list(vars(commands).values())) | _names(OPERATORS)
          | _names(MOVABLE_LIMIT_TEXTS) | {r"\of", "\\ "}) - {commands.MATH}
_KNOWN_NAMES = sorted(k for k in _KNOWN if re.fullmatch(r"\\[A-Za-z]+", k))
_ENVIRONMENTS = sorted(m[1:] for m in commands.MATRICES)

# Arguments each command reads (as latex2mathml's walker reads them), and those that may first
# take an optional [argument].
_ARITY: dict[str, int] = {
    commands.SUBSCRIPT: 1, commands.SUPERSCRIPT: 1,
    **dict.fromkeys(commands.COMMANDS_WITH_ONE_PARAMETER, 1), **dict.fromkeys(commands.LOCAL_FONTS, 1),
    **dict.fromkeys(commands.COMMANDS_WITH_TWO_PARAMETERS, 2), **dict.fromkeys(commands.EXTENSIBLE_ARROWS, 1),
    commands.SQRT: 1, commands.SMASH: 1, commands.LEFTROOT: 1, commands.UPROOT: 1,
    **dict.fromkeys((commands.HSKIP, commands.HSPACE, commands.KERN, commands.MKERN, commands.MSKIP,
                     commands.MSPACE), 1),
    **dict.fromkeys((commands.RAISE, commands.LOWER, commands.MOVELEFT, commands.MOVERIGHT, commands.RULE,
                     commands.SKEW, commands.COLORBOX), 2),
    commands.FCOLORBOX: 3, commands.SIDESET: 3, commands.MATHCHOICE: 4,
}
_OPTIONAL = {commands.SQRT, commands.SMASH, *commands.EXTENSIBLE_ARROWS}
# Commands that take their first argument as raw text (`\text{...}`, matched with it by the
# tokenizer) and those of them that read one more argument after it.
_TEXT_COMMANDS = {commands.TEXT, commands.TEXTBF, commands.TEXTIT, commands.TEXTMD, commands.TEXTNORMAL,
                  commands.TEXTRM, commands.TEXTSF, commands.TEXTTT, commands.TEXTUP, commands.EMPH, commands.FBOX,
                  commands.HBOX, commands.MBOX, commands.CLAP, commands.LLAP, commands.RLAP, commands.TAG,
                  commands.TAGSTAR, commands.COLOR, commands.CLASS, commands.STYLE, commands.HREF,
                  commands.TEXTCOLOR, commands.UNDERBAR}
_TEXT_THEN_ONE = {commands.CLASS, commands.STYLE, commands.HREF, commands.TEXTCOLOR}
# Commands the tokenizer only reads whole; alone, latex2mathml misreads or fails on them.
_BARE = {commands.BEGIN: r"an environment name in braces, like \begin{matrix}",
         commands.END: r"an environment name in braces, like \end{matrix}",
         commands.OPERATORNAME: r"a name of letters in braces, like \operatorname{softmax}",
         commands.VERB: r"its text between two equal characters, like \verb|x|"}
_DELIMITERS = {"(", ")", "[", "]", "<", ">", "/", "|", ".", r"\{", r"\}", r"\|", r"\lbrace", r"\rbrace", r"\lbrack",
               r"\rbrack", r"\langle", r"\rangle", r"\lAngle", r"\rAngle", r"\vert", r"\Vert", r"\lvert", r"\rvert",
               r"\lVert", r"\rVert", r"\lfloor", r"\rfloor", r"\lceil", r"\rceil", r"\backslash", r"\uparrow",
               r"\downarrow", r"\updownarrow", r"\Uparrow", r"\Downarrow", r"\Updownarrow", r"\lgroup", r"\rgroup",
               r"\lmoustache", r"\rmoustache", r"\ulcorner", r"\urcorner", r"\llcorner", r"\lrcorner",
               r"\llbracket", r"\rrbracket", r"\lBrace", r"\rBrace"}
_BIG = {*commands.BIG, *commands.BIG_OPEN_CLOSE}
_BIG_DELIMITERS = ("(", ")", "[", "]", "<", ">", "/", "|", ".")  # \big prints any other delimiter as text
# What cannot be an argument: it ends a group, a cell or a row, or needs something before it.
_NOT_ARGUMENT = {"}", "&", r"\\", r"\cr", commands.RIGHT, commands.MIDDLE, commands.SUBSCRIPT, commands.SUPERSCRIPT,
                 commands.OVER, commands.ATOP, commands.ABOVE, commands.CHOOSE, commands.BRACE, commands.BRACK,
                 commands.ATOPWITHDELIMS, commands.ABOVEWITHDELIMS}
_INFIX = {commands.OVER, commands.ATOP, commands.CHOOSE}  # need something on both sides
_DEFINERS = {commands.NEWCOMMAND, commands.DEF, commands.DECLAREMATHOPERATOR}

_ERRORS = {  # latex2mathml's own complaints, for what the checks below leave to it
    "NumeratorNotFoundError": r"a fraction (\over, \atop, \choose) has nothing above it",
    "DenominatorNotFoundError": r"a fraction (\over, \atop, \choose) has nothing below it",
    "DoubleSubscriptsError": "double subscript; group it, as in x_{a_b}",
    "DoubleSuperscriptsError": "double superscript; group it, as in x^{a^b}",
    "MissingSuperScriptOrSubscriptError": "'^' or '_' has nothing after it",
    "LimitsMustFollowMathOperatorError": r"\limits or \nolimits must follow an operator such as \sum",
    "InvalidAlignmentError": "column alignment may only use l, c, r and |",
    "InvalidStyleForGenfracError": r"the style argument of \genfrac must be 0, 1, 2 or 3",
    "InvalidWidthError": r"the width argument of \skew must be a whole number",
    "NoAvailableTokensError": "a command is missing its argument",
}


def check_fence(fence, path: str) -> None:
    """A math fence of the page at `path` (a sources.markdown.Fence) that cannot be converted fails
    with SourceError at the formula's own line when it is known, else at the fence's."""
    try:
        to_mathml(fence.body)
    except MathError as exc:
        raise SourceError(path, fence.body_line + exc.line - 1 if exc.line else fence.line, str(exc)) from None


def to_mathml(source: str) -> str:
    """MathML for a LaTeX formula; MathError (a ValueError) naming the mistake and where it is."""
    formula = source.strip()
    if not formula:
        raise MathError("math fence is empty; write a LaTeX formula between the fences")
    try:
        tokens = _tokenize(source)
        if not tokens:
            raise _Mistake("it holds only comments")
        partner = _check_structure(tokens)
        _check_arguments(tokens, partner)
        try:
            mathml = convert(formula, display="block")
        except Exception as exc:  # latex2mathml raises many exception types for bad input
            name = type(exc).__name__
            detail = f"{name}: {exc}" if str(exc) else name
            raise _Mistake(_ERRORS.get(name, f"latex2mathml cannot read it ({detail})")) from None
        _check_output(mathml, tokens)
    except _Mistake as mistake:
        raise _error(source, mistake) from None
    return mathml


def _error(source: str, mistake: _Mistake) -> MathError:
    if mistake.token is None:
        shown = " ".join(source.split())
        shown = shown if len(shown) <= 80 else shown[:80] + "…"
        return MathError(f'math fence "{shown}" is not valid LaTeX: {mistake.what}')
    offset = mistake.token.start
    line = source.count("\n", 0, offset) + 1
    line_start = source.rfind("\n", 0, offset) + 1
    line_end = source.find("\n", offset)
    text = source[line_start:None if line_end < 0 else line_end].rstrip()
    column = offset - line_start + 1
    where = (f'line {line}, column {column} of the formula ("{text}")' if "\n" in source.strip()
             else f'column {column} of "{text}"')
    return MathError(f"math fence is not valid LaTeX at {where}: {mistake.what}", line)


def _tokenize(source: str) -> list[_Token]:
    """latex2mathml's tokens with their offsets (its tokenizer, match by match)."""
    tokens = []
    for m in PATTERN.finditer(source):
        kind = next(k for k in _KINDS if m.group(k) is not None)
        if kind == "comment":
            continue
        if kind == "math_font" and "".join(m.group(p) for p in _PARTS[kind]) in SYMBOLS:
            tokens.append(_Token(m.group(0), m.start(), "symbol"))  # \mathbb{R}: one symbol, as the tokenizer has it
        elif kind in _PARTS:
            tokens.extend(_Token(m.group(p), m.start(p), kind) for p in _PARTS[kind] if m.group(p) is not None)
        elif kind == "text_cmd":
            tokens.append(_Token(m.group(kind), m.start(), kind, m.group("text_content")))
        else:
            text = m.group(kind)
            tokens.append(_Token("".join(text.split()) if kind in ("begin_end", "operatorname") else text,
                                 m.start(), kind))
    return tokens


def _q(text: str) -> str:
    return f"'{text}'"


def _opens(token: _Token) -> str | None:
    """What closes `token`, if it opens a group."""
    if token.text == "{" and token.kind in ("char", "math_font"):
        return "}"
    if token.text == commands.LEFT:
        return commands.RIGHT
    if token.kind == "begin_end" and token.text.startswith(commands.BEGIN):
        return commands.END + token.text[len(commands.BEGIN):]
    return None


def _closes(token: _Token) -> bool:
    return (token.text == "}" and token.kind in ("char", "math_font")) or token.text == commands.RIGHT \
        or (token.kind == "begin_end" and token.text.startswith(commands.END))


def _opener_of(closer: str) -> str:
    if closer == "}":
        return "{"
    if closer == commands.RIGHT:
        return commands.LEFT
    return commands.BEGIN + closer[len(commands.END):]


def _check_structure(tokens: list[_Token]) -> dict[int, int]:
    """Groups, \\left…\\right, environments, delimiters and command names; the index that closes
    each opening token."""
    stack: list[int] = []
    partner: dict[int, int] = {}
    macros: set[str] = set()
    environments: set[str] = set()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        text = token.text
        if token.kind in ("command", "escaped") or (token.kind == "math_font" and token.text.startswith("\\")):
            _check_command(token, macros)
        if text in (commands.LEFT, commands.RIGHT, commands.MIDDLE) or text in _BIG:
            _check_delimiter(tokens, i)
        if text in _DEFINERS and i + 1 < len(tokens):
            name = tokens[i + 2] if tokens[i + 1].text == "{" and i + 2 < len(tokens) else tokens[i + 1]
            macros.add(name.text)
        elif text == commands.NEWENVIRONMENT and i + 1 < len(tokens) and tokens[i + 1].text == "{":
            letters = itertools.takewhile(lambda t: t.text != "}", tokens[i + 2:])
            environments.add("".join(t.text for t in letters))
        if token.kind == "char" and text == "$":
            raise _Mistake("'$' is not needed: the fence is math already (write \\$ for a dollar sign)", token)
        if token.kind == "char" and text == "\\":
            following = f" followed by {_q(tokens[i + 1].text)}" if i + 1 < len(tokens) else " at the end"
            raise _Mistake(f"'\\'{following} is not a command", token)
        if token.kind == "text_cmd" and ("{" in token.content or "\\" in token.content):
            inside = "braces" if "{" in token.content else "commands"
            raise _Mistake(f"{_q(text + '{...}')} cannot hold {inside}; latex2mathml would print them as text", token)
        if token.kind == "begin_end" and token.text.startswith(commands.BEGIN):
            name = token.text[len(commands.BEGIN) + 1:-1]
            if name not in _ENVIRONMENTS and name not in environments:
                raise _Mistake(f"unknown environment {_q(name)}; {_closest(name, _ENVIRONMENTS, all_=True)}", token)
        if text == "&" and token.kind == "char" \
                and not any(tokens[k].kind == "begin_end" for k in stack):
            raise _Mistake("'&' is outside an environment such as align or matrix; write \\& for an ampersand", token)
        if text == commands.MIDDLE and not (stack and tokens[stack[-1]].text == commands.LEFT):
            raise _Mistake(r"'\middle' is not between '\left' and '\right'", token)

        if _opens(token):
            stack.append(i)
        elif _closes(token):
            closer = text
            if stack and _opens(tokens[stack[-1]]) == closer:
                partner[stack.pop()] = i
            elif any(_opens(tokens[k]) == closer for k in stack):
                top = tokens[stack[-1]]
                raise _Mistake(f"{_q(top.text)} is not closed by {_q(_opens(top))} before {_q(closer)}", top)
            elif stack and tokens[stack[-1]].kind == "begin_end" and token.kind == "begin_end":
                top = tokens[stack[-1]]
                raise _Mistake(f"{_q(top.text)} is closed by {_q(closer)}", token)
            else:
                raise _Mistake(f"{_q(closer)} has no matching {_q(_opener_of(closer))}", token)
        if text in (commands.LEFT, commands.RIGHT, commands.MIDDLE) or text in _BIG:
            i += 1  # the delimiter, which is no group even when it is a brace
        i += 1
    if stack:
        top = tokens[stack[-1]]
        raise _Mistake(f"{_q(top.text)} is never closed" + ("" if top.text == "{" else f" by {_q(_opens(top))}"), top)
    return partner


def _check_command(token: _Token, macros: set[str]) -> None:
    text = token.text
    if text in _BARE:
        raise _Mistake(f"{_q(text)} needs {_BARE[text]}", token)
    if text in _KNOWN or text in macros:
        return
    if token.kind == "escaped" and text[1:].isspace():
        raise _Mistake("a '\\' ends the line; write '\\\\' for a line break or '\\ ' for a space", token)
    hint = _closest(text, _KNOWN_NAMES)
    raise _Mistake(f"unknown command {_q(text)}, which latex2mathml does not define" + (f"; {hint}" if hint else ""),
                   token)


def _check_delimiter(tokens: list[_Token], i: int) -> None:
    command = tokens[i]
    following = tokens[i + 1] if i + 1 < len(tokens) else None
    if command.text in _BIG:
        if following is None or following.text not in _BIG_DELIMITERS:
            got = f", got {_q(following.text)}" if following else ""
            raise _Mistake(f"{_q(command.text)} needs one of {' '.join(_BIG_DELIMITERS)} after it{got} "
                           r"(latex2mathml prints other delimiters as text; use \left and \right)", command)
    elif following is None or following.text not in _DELIMITERS:
        got = f", got {_q(following.text)}" if following else ""
        raise _Mistake(f"{_q(command.text)} needs a delimiter after it, such as ( [ | . \\{{ or \\langle{got}",
                       command)


def _argument_end(tokens: list[_Token], partner: dict[int, int], j: int) -> int | None:
    """The index after the argument starting at `j`, or None if there is none there."""
    if j >= len(tokens):
        return None
    token = tokens[j]
    if token.text in _NOT_ARGUMENT or (token.kind == "begin_end" and token.text.startswith(commands.END)):
        return None
    if j in partner:  # a group, \left…\right (and the delimiter after \right) or an environment
        return partner[j] + (2 if token.text == commands.LEFT else 1)
    if token.text in _BIG:
        return j + 2
    end = j + 1
    for _ in range(_arguments(token)):
        if end < len(tokens) and token.text in _OPTIONAL and tokens[end].text == "[":
            end = _bracket_end(tokens, end)
        end = _argument_end(tokens, partner, end)
        if end is None:
            return j + 1  # reported when the check reaches this command itself
    return end


def _arguments(token: _Token) -> int:
    if token.kind == "text_cmd":
        return 1 if token.text in _TEXT_THEN_ONE else 0
    if token.kind == "command" and token.text in _TEXT_COMMANDS:
        return 2 if token.text in _TEXT_THEN_ONE else 1
    return _ARITY.get(token.text, 0) if token.kind in ("command", "char", "subsup_operator", "frac_cmd",
                                                        "math_font") else 0


def _bracket_end(tokens: list[_Token], j: int) -> int:
    for k in range(j + 1, len(tokens)):
        if tokens[k].text == "]":
            return k + 1
    raise _Mistake(f"'[' after {_q(tokens[j - 1].text)} is never closed by ']'", tokens[j])


def _check_arguments(tokens: list[_Token], partner: dict[int, int]) -> None:
    """Every command has the arguments latex2mathml reads, inside its own group."""
    for i, token in enumerate(tokens):
        if token.text in (commands.LIMITS, commands.NOLIMITS):
            if i + 1 >= len(tokens) or tokens[i + 1].text not in (commands.SUBSCRIPT, commands.SUPERSCRIPT):
                raise _Mistake(f"{_q(token.text)} must be followed by '_' or '^'", token)
        if token.text in _INFIX:
            if i == 0 or tokens[i - 1].text in ("{", "&", r"\\") or _opens(tokens[i - 1]):
                raise _Mistake(f"{_q(token.text)} has nothing above it", token)
            if _argument_end(tokens, partner, i + 1) is None:
                raise _Mistake(f"{_q(token.text)} has nothing below it", token)
        wanted = _arguments(token)
        end = i + 1
        for found in range(wanted):
            if end < len(tokens) and token.text in _OPTIONAL and tokens[end].text == "[" and found == 0:
                end = _bracket_end(tokens, end)
            end = _argument_end(tokens, partner, end)
            if end is None:
                if token.text in (commands.SUPERSCRIPT, commands.SUBSCRIPT):
                    what = "superscript" if token.text == commands.SUPERSCRIPT else "subscript"
                    raise _Mistake(f"{_q(token.text)} has no {what} after it", token)
                raise _Mistake(f"{_q(token.text)} needs {wanted} argument{'s' if wanted > 1 else ''}, "
                               f"found {found}", token)


_PRINTED = re.compile(r">([^<]*)<")


def _check_output(mathml: str, tokens: list[_Token]) -> None:
    """A command latex2mathml knows but cannot place here, printed as its name (like \\hline
    outside a table): the one check that reads latex2mathml's answer."""
    written: dict[str, _Token] = {}
    for token in tokens:
        if token.kind in ("command", "escaped"):
            written.setdefault(token.text, token)
    for text in _PRINTED.findall(mathml):
        for name in re.findall(r"\\(?:[A-Za-z]+|.)", text):
            if name in written:
                raise _Mistake(f"{_q(name)} cannot be used here; latex2mathml would print it as text",
                               written[name])


def _closest(word: str, choices: list[str], all_: bool = False) -> str:
    near = difflib.get_close_matches(word, choices, n=3, cutoff=0.75)
    hint = f"did you mean {' or '.join(_q(n) for n in near)}?" if near else ""
    if all_:
        return (hint + " " if hint else "") + f"valid: {', '.join(choices)}"
    return hint


def math_format(source, language, class_name, options, md, **kwargs) -> str:
    # The plugin checked every math fence with file and line already; this is the render.
    try:
        mathml = to_mathml(source)
    except ValueError as exc:
        raise SuperFencesException(str(exc)) from None
    return f'<div class="eg-math" role="math" aria-label="{esc(source.strip())}">{mathml}</div>'


FENCE = {"name": MATH_FENCE_NAME, "class": "math", "format": math_format}
