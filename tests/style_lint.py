#!/usr/bin/env python3
"""The rules of ../shared/STYLE.md that a program can check, checked on every C file of the project.

Each rule, with why it exists:
  comma-statement    a statement of expressions joined by commas (`a = 1, b = 2;`, `return f(), x;`): one
                     statement, one line, one thing done; a comma hides the second
  comma-macro        a macro whose body is a comma expression (`#define NAME(x) (f(x), y)`): a function
                     does the job and says its types
  nested-ternary     a conditional inside a conditional: a switch, an if or a table reads better
  positional-init    a struct of the project's own filled by position (`(sdfed_x){1, 2}`): a reordered
                     field silently changes the meaning; designated initialisers say which is which
  clock-in-core      a clock under shared/ (time.h, clock_gettime, ...): the core is pure and takes time
                     from its caller, so the same inputs give the same bits on every host
  atoi               atoi/atof/atol/atoll: they cannot report bad input; the project's parsers do
  core-specifics     a path or a data set's name in a string under shared/, or a data set's name in a
                     name there (sdfed_fmnist_...): the core knows no files of this repository and no
                     data set; the host says them
  one-letter-global  a variable at file scope named by one letter: a global needs a name that explains it
  floor-prefix       a function, type or variable a header of shared/ declares without sdfed_, one of
                     native/ without native_, one of aggregator/ without agg_: a name says which floor
                     it lives on, the core, the host or the server
  own-crypto         a constant that only a cryptographic primitive's own code holds (SHA-256's and
                     SHA-512's first round constant and initial value, MD5's and SHA-1's initial value,
                     ChaCha's "expand 32-byte k", X25519's 121665): cryptography comes from real libraries
                     (OpenSSL's libcrypto natively, WebCrypto in the page), never written here; the one rule
                     also read in the page's and the tools' JavaScript (web/, tools/: .js, .mjs)

A C tokenizer (comments, strings, characters and preprocessor lines understood; both sides of an #if
read) is enough for these rules: no compiler is needed, and every file is read whatever it is built for.
A file that says it is generated (its first line holds "GENERATED FILE") is its generator's output and is
not read: the generator is the code.
Prints `file:line: rule: what` for each finding and exits 1 if there is one.
    style_lint.py [FILE_OR_FOLDER...]   (default: the project's C folders)
    style_lint.py --self-test           each rule finds its bad example in tests/style_lint/, none in good.c
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["shared", "native", "aggregator", "tools", "wasm-client", "tests/unit", "tests/fuzz", "web"]
SCRIPTS = (".js", ".mjs")  # read for own-crypto alone
SKIP = {"tests/style_lint"}  # the self-test's examples, bad on purpose

KEYWORD_TYPES = {"static", "const", "volatile", "extern", "register", "unsigned", "signed", "int", "char",
                 "short", "long", "float", "double", "void", "_Bool", "bool", "struct", "union", "enum",
                 "typedef", "inline", "_Atomic", "__attribute__", "_Alignas", "_Thread_local", "_Static_assert",
                 "static_assert", "__thread"}
CONTROL = {"if", "while", "for", "switch"}
EXPRESSION_KEYWORDS = {"return", "sizeof", "case", "_Alignof", "_Generic"}
CLOCKS = {"clock_gettime", "gettimeofday", "clock", "time", "timespec_get", "emscripten_get_now", "ftime"}
ATOI = {"atoi", "atof", "atol", "atoll"}
CORE_SPECIFIC = re.compile(r"(\.gguf\b|\bmodels/|mnist|fashion)", re.IGNORECASE)
DATA_SET_NAME = re.compile(r"mnist|fashion", re.IGNORECASE)  # in an identifier
# own-crypto's constants, as numbers (any case, any integer suffix) and strings
CRYPTO_NUMBERS = {"0x428a2f98": "SHA-256's first round constant", "0x6a09e667": "SHA-256's initial value",
                  "0x428a2f98d728ae22": "SHA-512's first round constant",
                  "0x6a09e667f3bcc908": "SHA-512's initial value", "0x67452301": "MD5's and SHA-1's initial value",
                  "121665": "X25519's constant (A - 2) / 4"}
CRYPTO_STRINGS = {"expand 32-byte k": "ChaCha's and Salsa20's constant"}
CRYPTO_LITERAL = re.compile(r"\b(0[xX][0-9a-fA-F]+|[0-9]+)[uUlLn]*\b")  # in a script's text

TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f\v]+) | (?P<newline>\n) |
    (?P<comment>//[^\n]*|/\*.*?\*/) |
    (?P<string>[LuU8]*"(?:\\.|[^"\\\n])*") | (?P<char>[LuU]?'(?:\\.|[^'\\\n])*') |
    (?P<number>\.?[0-9](?:[eEpP][+-]|[0-9A-Za-z_.])*) |
    (?P<ident>[A-Za-z_][A-Za-z_0-9]*) |
    (?P<punct>\.\.\.|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|\#\#|[^\s])
""", re.VERBOSE | re.DOTALL)


class Tok:
    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind, self.text, self.line = kind, text, line


def tokenize(source, directives_read=True):
    """(code tokens, preprocessor directives as (line, text with continuations joined))"""
    tokens, directives = [], []
    line, at_line_start, i = 1, directives_read, 0
    while i < len(source):
        if at_line_start:
            m = re.match(r"[ \t]*#", source[i:])
            if m:  # a directive runs to the end of its line, continuations included
                j = i
                while True:
                    end = source.find("\n", j)
                    if end < 0:
                        end = len(source)
                    if end > 0 and source[end - 1] == "\\":
                        j = end + 1
                        continue
                    break
                text = source[i:end]
                directives.append((line, text))
                line += text.count("\n")
                i = end
                continue
        m = TOKEN.match(source, i)
        if not m:
            raise ValueError("line %d: cannot read %r" % (line, source[i:i + 20]))
        kind = m.lastgroup
        text = m.group(kind)
        if kind == "newline":
            line += 1
            at_line_start = directives_read
        elif kind == "comment":
            line += text.count("\n")
        elif kind != "space":
            tokens.append(Tok(kind, text, line))
            at_line_start = False
        i = m.end()
    return tokens, directives


def matching(tokens, i):
    """index of the bracket closing the one at i"""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opener, closer, depth = tokens[i].text, pairs[tokens[i].text], 0
    for j in range(i, len(tokens)):
        if tokens[j].text == opener:
            depth += 1
        elif tokens[j].text == closer:
            depth -= 1
            if depth == 0:
                return j
    return len(tokens) - 1


def opening(tokens, i):
    """index of the bracket opening the ')' at i"""
    depth = 0
    for j in range(i, -1, -1):
        if tokens[j].text == ")":
            depth += 1
        elif tokens[j].text == "(":
            depth -= 1
            if depth == 0:
                return j
    return 0


def brace_kind(tokens, i, enclosing):
    """'block' (statements), 'type' (members, enumerators) or 'init' for the '{' at i"""
    if enclosing == "init" or i == 0:
        return "init" if enclosing == "init" else "block"
    prev = tokens[i - 1]
    if prev.text == ")":
        o = opening(tokens, i - 1)
        before = tokens[o - 1] if o > 0 else None
        if before is not None and before.kind == "ident" and before.text not in EXPRESSION_KEYWORDS:
            return "block"  # a function's body, if/for/while/switch, or a macro that loops
        return "init"  # a compound literal: (type){...}
    if prev.text in ("=", "return", "(", ",", "[", "?", "]"):
        return "init"
    if prev.kind == "ident":
        if prev.text in ("struct", "union", "enum") or tokens[i - 2].text in ("struct", "union", "enum"):
            return "type"
    return "block"


def strip_prefixes(stmt):
    """a statement without its labels and the control heads before it (`case 1:`, `if (x)`, `else`)"""
    k = 0
    while k < len(stmt):
        t = stmt[k].text
        if t in ("case", "default"):
            depth = 0
            j = k
            while j < len(stmt) and not (stmt[j].text == ":" and depth == 0):
                depth += stmt[j].text in "([{"
                depth -= stmt[j].text in ")]}"
                j += 1
            k = j + 1
        elif stmt[k].kind == "ident" and k + 1 < len(stmt) and stmt[k + 1].text == ":" and t not in KEYWORD_TYPES:
            k += 2  # a label
        elif t in CONTROL and k + 1 < len(stmt) and stmt[k + 1].text == "(":
            k = matching(stmt, k + 1) + 1
        elif t in ("else", "do"):
            k += 1
        else:
            break
    return stmt[k:]


def is_declaration(stmt):
    if not stmt:
        return True
    first = stmt[0]
    if first.text in KEYWORD_TYPES:
        return True
    if first.kind != "ident" or first.text in EXPRESSION_KEYWORDS:
        return False
    j = 1
    while j < len(stmt) and stmt[j].text == "*":
        j += 1
    while j < len(stmt) and stmt[j].text in ("const", "restrict", "volatile"):
        j += 1
    return j < len(stmt) and stmt[j].kind == "ident"


def declared_name(stmt, after_typedef_body):
    """the name a file-scope declaration declares (a function, a typedef, a variable), None when unsure"""
    if after_typedef_body:
        return stmt[0] if stmt[0].kind == "ident" else None  # `} name;` after a typedef's body
    tokens = [t for t in stmt if t.text not in ("__attribute__",)]
    depth = 0
    for j, t in enumerate(tokens):  # a function pointer's name: (*name), not a parameter's
        if t.text == "(" and depth == 0 and j + 2 < len(tokens) and tokens[j + 1].text == "*" and \
                tokens[j + 2].kind == "ident":
            return tokens[j + 2]
        depth += (t.text in "([{") - (t.text in ")]}")
    depth = 0
    last = None
    for j, t in enumerate(tokens):
        if t.text == "(" and depth == 0 and last is not None and j > 0 and tokens[j - 1] is last:
            return last  # a function
        if t.text in "([{":
            depth += 1
        elif t.text in ")]}":
            depth -= 1
        elif depth == 0 and t.text in ("=", "[", ":"):
            break
        elif depth == 0 and t.kind == "ident" and t.text not in KEYWORD_TYPES:
            last = t
    return last


def depth_zero_comma(stmt):
    depth = 0
    for t in stmt:
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
        elif t.text == "," and depth == 0:
            return t
    return None


class Linter:
    def __init__(self):
        self.findings = []
        self.structs = set()  # the project's own struct types, by their typedef names

    def report(self, path, line, rule, what):
        self.findings.append("%s:%d: %s: %s" % (path, line, rule, what))

    def learn_structs(self, tokens):
        for i, t in enumerate(tokens):
            if t.text == "typedef" and i + 1 < len(tokens) and tokens[i + 1].text in ("struct", "union"):
                j = i + 2
                if j < len(tokens) and tokens[j].kind == "ident":
                    j += 1
                if j < len(tokens) and tokens[j].text == "{":
                    j = matching(tokens, j) + 1
                if j < len(tokens) and tokens[j].kind == "ident":
                    self.structs.add(tokens[j].text)

    def lint_script(self, path, source):
        """own-crypto in JavaScript: its numbers and strings, found in the text line by line"""
        rel = os.path.relpath(path, ROOT)
        for n, line in enumerate(source.split("\n"), 1):
            found = [CRYPTO_NUMBERS.get(m.group(1).lower()) for m in CRYPTO_LITERAL.finditer(line)]
            found += [w for text, w in CRYPTO_STRINGS.items() if text in line]
            for what in filter(None, found):
                self.report(rel, n, "own-crypto", "%s: cryptography comes from libcrypto or WebCrypto" % what)

    def lint_crypto_constant(self, rel, t):
        what = None
        if t.kind == "number":
            what = CRYPTO_NUMBERS.get(t.text.lower().rstrip("ul"))
        elif t.kind == "string":
            what = next((w for text, w in CRYPTO_STRINGS.items() if text in t.text), None)
        if what:
            self.report(rel, t.line, "own-crypto", "%s: cryptography comes from libcrypto or WebCrypto" % what)

    def lint(self, path, tokens, directives, all_core=False):
        rel = os.path.relpath(path, ROOT)
        in_core = all_core or rel.startswith("shared" + os.sep)
        self.floor_prefix = None  # what a header's declarations start with
        if rel.endswith(".h"):
            if in_core:
                self.floor_prefix = "sdfed_"
            elif rel.startswith("native" + os.sep):
                self.floor_prefix = "native_"
            elif rel.startswith("aggregator" + os.sep):
                self.floor_prefix = "agg_"
        self.typedef_body = False  # the type body being read began a typedef
        self.heading_type = False
        for line, text in directives:
            self.lint_directive(rel, line, text, in_core)
        stack = []  # the kinds of the braces open
        statement = []
        self.after_type = False  # the file-scope statement began with a struct's body: `struct {...} name;`
        for i, t in enumerate(tokens):
            self.lint_crypto_constant(rel, t)
            enclosing = stack[-1] if stack else None
            if t.text == "{":
                kind = brace_kind(tokens, i, enclosing)
                if kind != "init" and enclosing in (None, "block", "type"):
                    if enclosing is None and kind == "type":
                        self.typedef_body = bool(statement) and statement[0].text == "typedef"
                    self.heading_type = enclosing is None and kind == "type"  # `typedef struct x {`: no name yet
                    self.end_statement(rel, statement, enclosing)
                    self.heading_type = False
                    statement = []
                stack.append(kind)
                if kind == "init" or enclosing == "init":
                    statement.append(t)
                continue
            if t.text == "}":
                kind = stack.pop() if stack else "block"
                if kind == "init":
                    statement.append(t)
                    continue
                self.end_statement(rel, statement, kind)
                statement = []
                self.after_type = kind == "type" and not stack
                continue
            if t.text == ";" and enclosing != "init" and not self.in_parens(statement):
                self.end_statement(rel, statement, enclosing)
                statement = []
                continue
            statement.append(t)
            if t.kind == "ident" and i + 1 < len(tokens) and tokens[i + 1].text == "(":
                if t.text in ATOI:
                    self.report(rel, t.line, "atoi", "%s cannot report bad input; parse with an error" % t.text)
                if in_core and t.text in CLOCKS and (i == 0 or tokens[i - 1].text not in (".", "->")):
                    self.report(rel, t.line, "clock-in-core", "%s() in the core; take the time from the caller" % t.text)
            if t.kind == "string" and in_core and CORE_SPECIFIC.search(t.text):
                self.report(rel, t.line, "core-specifics", "%s in the core; the host names files and data sets"
                            % t.text)
            if t.kind == "ident" and in_core and DATA_SET_NAME.search(t.text):
                self.report(rel, t.line, "core-specifics", "%s in the core: a data set's; the host's to name" % t.text)
            if t.text == "?":
                self.check_ternary(rel, tokens, i)
        self.check_inits(rel, tokens)

    @staticmethod
    def in_parens(statement):
        depth = 0
        for t in statement:
            depth += t.text == "("
            depth -= t.text == ")"
        return depth > 0  # a for's head

    def end_statement(self, rel, statement, enclosing):
        if not statement:
            return
        if enclosing == "block":
            body = strip_prefixes(statement)
            comma = depth_zero_comma(body)
            if comma and not is_declaration(body):
                self.report(rel, comma.line, "comma-statement", "a comma joins two statements: write two")
        elif enclosing is None:
            self.check_floor_prefix(rel, statement)
            self.check_global(rel, statement)

    def check_floor_prefix(self, rel, statement):
        """the name a header's file-scope declaration declares starts with the floor's prefix"""
        if not self.floor_prefix or self.heading_type or statement[0].text in ("static_assert", "_Static_assert"):
            return
        name = declared_name(statement, self.after_type and self.typedef_body)
        if name and not name.text.startswith(self.floor_prefix):
            self.report(rel, name.line, "floor-prefix", "%s is declared here without %s" % (name.text,
                                                                                       self.floor_prefix))

    def check_global(self, rel, statement):
        after_type, self.after_type = self.after_type, False
        if not (after_type or is_declaration(statement)) or statement[0].text == "typedef":
            return
        depth = 0
        for j, t in enumerate(statement):
            if t.text in "([{":
                depth += 1
            elif t.text in ")]}":
                depth -= 1
            elif depth == 0 and t.kind == "ident" and len(t.text) == 1 and (j > 0 or after_type):
                after = statement[j + 1].text if j + 1 < len(statement) else ";"
                if after in ("=", ";", ",", "["):
                    self.report(rel, t.line, "one-letter-global", "a global named %s: name what it holds" % t.text)
                    return
            elif depth == 0 and t.text == "=":
                return

    def check_ternary(self, rel, tokens, i):
        """another '?' inside this conditional's operands (forward to its end, backward to its start)"""
        depth = 0
        for j in range(i + 1, len(tokens)):
            t = tokens[j].text
            if t in "([{":
                depth += 1
            elif t in ")]}":
                depth -= 1
                if depth < 0:
                    break
            elif depth == 0 and t in (",", ";"):
                break
            elif t == "?":
                self.report(rel, tokens[i].line, "nested-ternary", "a conditional inside a conditional")
                return
        depth = 0
        for j in range(i - 1, -1, -1):
            t = tokens[j].text
            if t in ")]}":
                depth += 1
            elif t in "([{":
                depth -= 1
                if depth < 0:
                    break
            elif depth == 0 and (t in (",", ";", "=", "return", "+=", "-=", "*=", "/=", "|=", "&=", ":")):
                break
            elif t == "?":
                self.report(rel, tokens[i].line, "nested-ternary", "a conditional inside a conditional")
                return

    def check_inits(self, rel, tokens):
        """`NAME var = {...}`, `NAME var[] = {{...}}` and `(NAME){...}` with NAME a struct of the project"""
        for i, t in enumerate(tokens):
            if t.text != "{" or i < 2:
                continue
            prev = tokens[i - 1]
            struct = None
            array = False
            if (prev.text == ")" and i >= 4 and tokens[i - 2].kind == "ident" and tokens[i - 3].text == "(" and
                    (tokens[i - 4].kind != "ident" or tokens[i - 4].text in EXPRESSION_KEYWORDS)):
                struct = tokens[i - 2].text  # (NAME){, not if (name) {
            elif prev.text == "=":
                j = i - 2
                if tokens[j].text == "]":
                    array = True
                    while j > 0 and tokens[j].text != "[":
                        j -= 1
                    j -= 1
                if j >= 1 and tokens[j].kind == "ident":
                    k = j - 1
                    while k >= 0 and tokens[k].text in ("*", "const"):
                        k -= 1
                    if k >= 0 and tokens[k].kind == "ident":
                        struct = tokens[k].text
            if struct not in self.structs:
                continue
            if array:
                end = matching(tokens, i)
                j = i + 1
                while j < end:
                    if tokens[j].text == "{":
                        self.check_positional(rel, tokens, j, struct)
                        j = matching(tokens, j)
                    j += 1
            else:
                self.check_positional(rel, tokens, i, struct)

    def check_positional(self, rel, tokens, i, struct):
        first = tokens[i + 1]
        if first.text in ("}", ".", "["):
            return
        if first.text == "0" and tokens[i + 2].text == "}":
            return  # {0}: all zero
        self.report(rel, first.line, "positional-init", "%s filled by position: name its fields" % struct)

    def lint_directive(self, rel, line, text, in_core):
        body = text.strip()[1:].strip()
        if in_core and re.match(r"include\s*<(sys/)?time\.h>", body):
            self.report(rel, line, "clock-in-core", "time.h in the core; take the time from the caller")
        m = re.match(r"define\s+([A-Za-z_][A-Za-z_0-9]*)(\([^)]*\))?\s*(.*)", body, re.DOTALL)
        if m and in_core and DATA_SET_NAME.search(m.group(1)):
            self.report(rel, line, "core-specifics", "%s in the core: a data set's; the host's to name" % m.group(1))
        if not m or not m.group(3):
            return
        tokens, _ = tokenize(m.group(3).replace("\\\n", " "), directives_read=False)
        if tokens and tokens[0].text == "(" and matching(tokens, 0) == len(tokens) - 1:
            tokens = tokens[1:-1]
        if tokens and tokens[0].text not in ("{",) and depth_zero_comma(tokens):
            self.report(rel, line, "comma-macro", "macro %s is a comma expression: write a function" % m.group(1))


def source_files(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for folder, dirs, files in os.walk(p):
            rel = os.path.relpath(folder, ROOT)
            dirs[:] = sorted(d for d in dirs if os.path.join(rel, d) not in SKIP and d != "node_modules")
            for f in sorted(files):
                if f.endswith((".c", ".h") + SCRIPTS):
                    yield os.path.join(folder, f)


def run(paths, all_core=False):
    """the findings in the files; all_core: read every file as the core's (the self-test's)"""
    linter = Linter()
    parsed = []
    for path in source_files(paths):
        with open(path, encoding="utf-8") as f:
            source = f.read()
        if "GENERATED FILE" in source.split("\n", 1)[0]:
            continue
        if path.endswith(SCRIPTS):
            linter.lint_script(path, source)
            continue
        tokens, directives = tokenize(source)
        linter.learn_structs(tokens)
        parsed.append((path, tokens, directives))
    for path, tokens, directives in parsed:
        linter.lint(path, tokens, directives, all_core)
    return linter.findings


def self_test():
    """each bad_RULE.c (.h): RULE's findings on exactly its lines marked `found`, no other; good.c: none"""
    here = os.path.join(ROOT, "tests", "style_lint")
    failed = 0
    names = sorted(n for n in os.listdir(here) if n.endswith((".c", ".h") + SCRIPTS) and n != "structs.h")
    for name in names:
        path = os.path.join(here, name)
        findings = run([os.path.join(here, "structs.h"), path], all_core=True)
        rule = os.path.splitext(name)[0][4:].replace("_", "-") if name.startswith("bad_") else None
        with open(path, encoding="utf-8") as f:
            marked = {n for n, line in enumerate(f, 1) if "/* found */" in line}
        found = {int(f.split(":")[1]) for f in findings}
        others = [f for f in findings if (": %s: " % rule) not in f]
        if found != marked or others:
            print("FAIL: %s: findings on lines %s, marked %s%s" % (name, sorted(found), sorted(marked),
                                                                  "; " + "; ".join(others) if others else ""))
            failed += 1
    rules = len({os.path.splitext(n)[0] for n in names if n.startswith("bad_")})
    print("style_lint self-test: %d rules each found in its bad examples, good.c clean: %d failed" % (rules, failed))
    return failed == 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return 0 if self_test() else 1
    if any(a.startswith("-") for a in argv[1:]):
        print(__doc__.strip())
        return 0 if argv[1:] in (["--help"], ["-h"]) else 2
    paths = argv[1:] or [os.path.join(ROOT, f) for f in FOLDERS]
    findings = run(paths)
    for f in findings:
        print(f)
    print("style_lint: %d finding%s" % (len(findings), "" if len(findings) == 1 else "s"))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
