#!/usr/bin/python3
"""`rootspan` on a terminal and on its command line (docs/cli.md).

Through a pseudo-terminal of 80 and of 200 columns: no line is wider than the
terminal, tables align by display width (CJK and combining marks in names),
the progress bar of a 205-tensor load is one line rewritten in place, Ctrl-C
during a load exits 130 with the bar erased, a resize applies to the next
draw, and --verify fails (exit 3,
naming the component and both digests) when the file changed under a load.
Without a terminal: per-subcommand help, `help`, --version, --opt=value,
`--`, suggestions, global options on either side of the subcommand, and
usage errors on stderr with status 2. Every --json output is validated
against its schema.

usage: cli_terminal_test.py ROOTSPAN_EXE EXAMPLE_CHECKPOINT
"""
import fcntl
import hashlib
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
import unicodedata

import cli_schemas
from checks import check, report

EXE = None
TENSORS = 205
TENSOR_BYTES = 2 << 20


def environment():
    env = dict(os.environ)
    env.pop("ROOTSPAN_MANIFEST", None)
    env.pop("COLUMNS", None)
    return env


def run(*args):
    result = subprocess.run([EXE, *args], capture_output=True, text=True, env=environment(), timeout=120)
    for problem in cli_schemas.check_output(args, result.returncode, result.stdout, result.stderr):
        check(False, problem)
    return result


def run_pty(args, columns, on_output=None, timeout=120):
    """Runs the program on a new pseudo-terminal of `columns` columns (its
    controlling terminal, so that ^C is SIGINT). on_output(process, text so
    far, the terminal's master descriptor) is called as output arrives. Returns (exit status, output)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen([EXE, *args], stdin=slave, stdout=slave, stderr=slave, env=environment(),
                               start_new_session=True,
                               preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(slave)
    output = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every slave descriptor is closed
                break
            if not chunk:
                break
            output += chunk
            if on_output is not None:
                on_output(process, output.decode("utf-8", "replace"), master)
        elif process.poll() is not None:
            break
    os.close(master)
    try:
        status = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        status = process.wait()
    return status, output.decode("utf-8", "replace")


def width(text):
    """Display columns, as a terminal counts them."""
    total = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        total += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return total


CSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def screen_lines(output):
    """What each line shows once every carriage return has rewritten it:
    [(segments written over each other)] per line."""
    return [[CSI.sub("", part) for part in line.split("\r")] for line in output.replace("\r\n", "\n").split("\n")]


def check_fits(output, columns, what):
    for segments in screen_lines(output):
        for segment in segments:
            check(width(segment) <= columns, "%s at %d columns: a line of %d columns: %r" %
                  (what, columns, width(segment), segment))


# ---- files --------------------------------------------------------------------

def safetensors(path, tensors, sparse=False):
    """tensors: [(name, dtype, shape, nbytes)], back to back; with sparse,
    the data is a hole (zeros) that costs no disk."""
    header, offset = {}, 0
    for name, dtype, shape, n in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        if sparse:
            f.truncate(8 + len(text) + offset)
        else:
            f.write(bytes((i * 7) & 0xFF for i in range(offset)))
    return 8 + len(text)


# ---- through a pseudo-terminal --------------------------------------------------

def test_help_fits(tmp):
    """Help wrapped to the terminal at 80 and 200 columns: no line wider, no
    word cut or lost, the program's name in every usage line."""
    for args in (["help"], ["load", "--help"], ["help", "plan"], ["inspect", "--help"]):
        plain = run(*args).stdout  # no terminal, no COLUMNS: not wrapped
        for columns in (80, 200):
            status, out = run_pty(args, columns)
            check(status == 0, "%s at %d columns: exit 0, got %d" % (args, columns, status))
            check_fits(out, columns, " ".join(args))
            check(out.split() == plain.split(), "%s at %d columns: the same words as unwrapped" % (args, columns))
            usage_lines = [line for line in out.splitlines() if line.startswith("Usage:")]
            check(usage_lines and all(line.startswith("Usage: rootspan") for line in usage_lines),
                  "%s at %d columns: usage lines name the program: %r" % (args, columns, usage_lines))


def test_names_stay_apart(tmp):
    """At 80 columns a verified load's rows stay distinct: names are cut by
    whole segments (the layer number and the last segments kept), digests are
    shortened to 16 hex digits, and SEGMENTS and KEY give way first."""
    names = ["model.layers.%d.self_attn.%s.weight" % (layer, proj) for layer in range(3) for proj in ("q_proj", "k_proj")]
    path = os.path.join(tmp, "layers.safetensors")
    safetensors(path, [(n, "F32", [4], 16) for n in names])
    for columns in (80, 200):
        status, out = run_pty(["load", path, "--verify", "--provider", "host"], columns)
        check(status == 0, "load --verify at %d: exit 0, got %d: %s" % (columns, status, out))
        check_fits(out, columns, "load --verify")
        rows = [line.split()[0] for line in out.splitlines() if line.startswith(("model.", "\u2026"))]
        check(len(rows) == len(names) and len(set(rows)) == len(names),
              "load --verify at %d: %d distinct rows: %r" % (columns, len(names), rows))
        digests = re.findall(r"\b[0-9a-f]{16,64}\b", out)
        check(digests and all(len(d) == 16 for d in digests), "at %d: digests shortened to 16: %r" % (columns, digests))
    missing = run("load", os.path.join(tmp, "no-such-file"))
    check(missing.returncode == 3 and missing.stderr.count("No such file") + missing.stderr.count("no such file") == 1
          and "auto:" not in missing.stderr, "a missing file is said once, with no provider line: %r" % missing.stderr)


def test_tables(tmp, example):
    names = ["model.layers.0.self_attn.q_proj.weight", "層.0.注意.重み", "cafe\u0301.bias",
             "a.really.long.name." + "x" * 120]
    path = os.path.join(tmp, "names.safetensors")
    safetensors(path, [(n, "F32", [4], 16) for n in names])
    for columns in (80, 200):
        status, out = run_pty(["inspect", path], columns)
        check(status == 0, "inspect at %d columns: exit 0, got %d: %s" % (columns, status, out))
        check_fits(out, columns, "inspect")
        lines = [segments[-1] for segments in screen_lines(out)]
        table = [line for line in lines if line.startswith("TENSOR") or line.startswith(("model.", "層", "cafe", "a.r"))]
        check(len(table) == 5, "inspect at %d: a header and 4 rows: %r" % (columns, table))
        # The last column (SIZE) is right-aligned: equal display widths mean
        # every column lined up, the CJK and combining names included.
        check(len({width(line) for line in table}) == 1, "inspect at %d: rows align by display width: %r" %
              (columns, [(width(line), line) for line in table]))
        check(all("16 B" in line for line in table[1:]), "inspect: sizes as units: %r" % table)
        long_row = [line for line in table if line.startswith("a.r")]
        if columns == 80:
            check(long_row and "\u2026" in long_row[0], "inspect at 80: the long name cut with an ellipsis: %r" % long_row)
        else:
            check(long_row and "x" * 120 in long_row[0], "inspect at 200: the long name whole: %r" % long_row)
        check("1 shard, 4 tensors" in " ".join(out.split()), "inspect: '1 shard' in the singular: %r" % out[:200])

        status, out = run_pty(["load", example, "--schema", os.path.join(example, "schema.json"), "--verify",
                               "--provider", "host"], columns)
        check(status == 0, "load --verify at %d: exit 0, got %d: %s" % (columns, status, out))
        check_fits(out, columns, "load --verify")
        check("KiB" in out and re.search(r"open and validate [0-9.]+ m?s, place [0-9.]+ m?s, verify", out),
              "load: sizes in KiB and phase times: %r" % out)
        check(re.search(r"total [0-9.]+ KiB: [0-9.]+ KiB mapped zero-copy, [0-9.]+ KiB copied at", out),
              "load: mapped bytes and the copy rate apart: %r" % out)
        status, out = run_pty(["providers"], columns)
        check(status == 0, "providers at %d: exit 0" % columns)
        check_fits(out, columns, "providers")


def big_checkpoint(tmp):
    path = os.path.join(tmp, "big.safetensors")
    data_start = safetensors(path, [("t%03d" % i, "F32", [TENSOR_BYTES // 4], TENSOR_BYTES) for i in range(TENSORS)],
                             sparse=True)
    return path, data_start


def test_progress(tmp):
    path, _ = big_checkpoint(tmp)
    for columns in (80, 200):
        status, out = run_pty(["load", path, "--strategy", "read", "--provider", "host"], columns)
        check(status == 0, "load of %d tensors at %d columns: exit 0, got %d: %s" % (TENSORS, columns, status,
                                                                                    out[-500:]))
        check_fits(out, columns, "progress and table")
        before_table = out.split("loaded %d components" % TENSORS)[0]
        check("\n" not in before_table, "the progress bar never starts a new line: %d lines before the table" %
              before_table.count("\n"))
        draws = before_table.count("\r")
        check(draws >= 2, "the progress bar is drawn and rewritten in place (\\r), %d draws" % draws)
        check(before_table.endswith("\r\x1b[K"), "the bar is erased before the table: %r" % before_table[-120:])
        check("410 MiB/410 MiB" in before_table or "410 MiB" in before_table,
              "the bar shows bytes done and total: %r" % before_table[-300:])
        if columns == 200:
            check("ETA" in before_table and "/s" in before_table, "the bar shows a rate and an ETA: %r" %
                  before_table[-300:])


def stop_at_first_progress(action):
    """An on_output that, at the first progress draw, stops the program,
    does `action`, and lets it go on."""
    state = {"done": False}

    def on_output(process, text, master):
        if not state["done"] and "\r[" in text:
            state["done"] = True
            os.kill(process.pid, signal.SIGSTOP)
            action(process, master)
            os.kill(process.pid, signal.SIGCONT)
    return on_output, state


def test_resize(tmp):
    """The window shrinks from 200 to 60 columns during the load: the bar's
    next draws, and the table after it, fit the new width."""
    path, _ = big_checkpoint(tmp)

    def shrink(_process, master):
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 60, 0, 0))
    on_output, state = stop_at_first_progress(shrink)
    status, out = run_pty(["load", path, "--strategy", "read", "--provider", "host"], 200, on_output)
    check(state["done"] and status == 0, "resize: the load went on, exit 0, got %d" % status)
    first_line = screen_lines(out)[0]
    check(len(first_line) >= 3, "resize: the bar was drawn again after the resize: %r" % first_line)
    # The first draw is at 200 columns; every later one within 60.
    for segment in first_line[2:]:
        check(width(segment) <= 60, "resize: a draw of %d columns after the window shrank to 60: %r" %
              (width(segment), segment))
    check_fits("\n".join(out.split("\n")[1:]), 60, "resize: the table")


def test_ctrl_c(tmp):
    path, _ = big_checkpoint(tmp)

    def interrupt(_process, master):
        # ^C typed on the terminal: its line discipline sends SIGINT to the
        # program (the foreground process group), delivered when it goes on.
        os.write(master, b"\x03")
    on_output, state = stop_at_first_progress(interrupt)
    status, out = run_pty(["load", path, "--strategy", "read", "--provider", "host"], 80, on_output)
    check(state["done"], "Ctrl-C: the progress bar was drawn: %r" % out[-300:])
    check(status == 130, "Ctrl-C: exit status 130, got %d: %r" % (status, out[-400:]))
    check("Cancelled" in out and "interrupted (Ctrl-C) while loading component" in out and "callback" not in out,
          "Ctrl-C: says it was interrupted, not a callback: %r" % out[-400:])
    check("loaded" not in out, "Ctrl-C: no table of a load that did not finish")
    last = out.rstrip("\r\n").split("\n")[-1]
    check(last.startswith("\r\x1b[K") or "\r\x1b[K" in out, "Ctrl-C: the bar was erased: %r" % last)


def test_verify_mismatch(tmp):
    path, data_start = big_checkpoint(tmp)
    changed = ["t%03d" % i for i in range(9)]  # t009 is loaded too and never changed

    def change_tensors(_process, _master):
        # The bar is first drawn once a read has completed, but reads finish
        # in any order: every byte of t000-t008 changes, so each of them read
        # before this point differs from the file, whichever it was.
        with open(path, "r+b") as f:
            f.seek(data_start)
            f.write(b"\x01" * (TENSOR_BYTES * len(changed)))
    on_output, state = stop_at_first_progress(change_tensors)
    status, out = run_pty(["load", path, "--strategy", "read", "--provider", "host", "--verify", "--tensors", "t00*"],
                          200, on_output)
    check(state["done"], "verify mismatch: the file was changed during the load")
    check(status == 3, "verify mismatch: exit 3, got %d: %r" % (status, out[-600:]))
    message = " ".join(line for line in out.splitlines() if "DigestMismatch" in line)
    named = re.findall(r'component "(t\d+)": provider memory has sha256 ([0-9a-f]{64}), '
                       r"the file's bytes have sha256 ([0-9a-f]{64})", message)
    zeros, ones = hashlib.sha256(bytes(TENSOR_BYTES)).hexdigest(), hashlib.sha256(b"\x01" * TENSOR_BYTES).hexdigest()
    check(named, "verify mismatch: names a component and both digests: %r" % message[-600:])
    # The write is not atomic against the loader: a read, or the verify's
    # second read of the file, can meet it half done and see a mix of old and
    # new bytes. What holds whichever way they interleave: memory was read
    # before the file was hashed again, so memory never has only the new bytes
    # (the file would then have them too, and nothing would differ), and the
    # file never has only the old ones. A swap of the two digests in the
    # message breaks it whenever either side saw a whole state, as nearly
    # always one does.
    for name, held, source in named:
        check(name in changed and held != source and held != ones and source != zeros,
              "verify mismatch: %s is a changed component, memory has the old bytes' digest (or a mix), the file "
              "the new (or a mix): %r" % (name, (held, source)))
    # The same in JSON: the document has both digests, the error is a JSON line.
    os.truncate(path, os.path.getsize(path))
    result = run("load", path, "--strategy", "read", "--provider", "host", "--verify", "--tensors", "t000", "--json")
    check(result.returncode == 0, "verify of an unchanged load: exit 0 (the file is now the truth): %s" % result.stderr)
    doc = json.loads(result.stdout) if result.returncode == 0 else {"components": [{}]}
    c = doc["components"][0]
    check(c.get("sha256") == c.get("source_sha256") and c.get("sha256"), "verify: both digests equal: %s" % c)


# ---- the command line --------------------------------------------------------------

def test_command_line(tmp, example):
    for sub in ("version", "providers", "inspect", "load", "plan"):
        r = run(sub, "--help")
        check(r.returncode == 0 and ("Usage: rootspan " + sub) in r.stdout and r.stderr == "",
              "%s --help: exit 0, its usage on stdout: %d %r %r" % (sub, r.returncode, r.stdout[:200], r.stderr))
        h = run("help", sub)
        check(h.returncode == 0 and h.stdout == r.stdout, "help %s equals %s --help" % (sub, sub))
    r = run("load", "--help")
    for option in ("--schema", "--tensors", "--strategy", "--verify", "--rank", "--world", "--split", "--json",
                   "--manifest", "--no-static"):
        check(option in r.stdout, "load --help lists %s" % option)
    r = run("help")
    check(r.returncode == 0 and all(s in r.stdout for s in ("inspect", "load", "plan", "providers", "version")),
          "help: the commands, exit 0: %r" % r.stdout[:300])
    r = run()
    check(r.returncode == 2 and r.stdout == "" and "Usage: rootspan" in r.stderr, "no command: help on stderr, exit 2")
    version = json.loads(run("version", "--json").stdout)["version"]
    r = run("--version")
    check(r.returncode == 0 and r.stdout.startswith("rootspan " + version + " "), "--version: %r" % r.stdout)

    # --opt=value and --opt value; global options before or after the subcommand.
    a = run("--json", "load", example, "--provider=host", "--strategy=read")
    b = run("load", example, "--provider", "host", "--strategy", "read", "--json")
    check(a.returncode == 0 and b.returncode == 0, "--opt=value and --opt value: exit 0: %s %s" % (a.stderr, b.stderr))
    if a.returncode == 0 and b.returncode == 0:
        ids = lambda r: [c["id"] for c in json.loads(r.stdout)["components"]]  # noqa: E731
        check(ids(a) == ids(b) and all(not c["zero_copy"] for c in json.loads(a.stdout)["components"]),
              "--strategy=read and --strategy read load the same, copied")
    # --verify of one rank's slice: the files' bytes of that slice.
    r = run("load", example, "--world", "2", "--rank", "1", "--split", "*=0", "--verify", "--json", "--provider", "host")
    check(r.returncode == 0, "load --verify of a slice: exit 0: %s" % r.stderr)
    if r.returncode == 0:
        sliced = json.loads(r.stdout)["components"]
        check(sliced and all(c["sha256"] == c["source_sha256"] and c["sha256"] for c in sliced),
              "load --verify of a slice: the digests agree: %s" % sliced)
    a = run("--no-static", "providers", "--json")
    b = run("providers", "--json", "--no-static")
    check(a.returncode == 0 and a.stdout == b.stdout and "\"host\"" not in a.stdout,
          "--no-static before or after the subcommand: %r %r" % (a.stdout, b.stdout))

    # "--" ends the options: a path that starts with "-".
    dashed = os.path.join(tmp, "-dashed.safetensors")
    safetensors(dashed, [("w", "F32", [1], 4)])
    os.chdir(tmp)
    r = run("inspect", "--json", "--", "-dashed.safetensors")
    check(r.returncode == 0 and json.loads(r.stdout)["tensors"][0]["name"] == "w", "-- then a path starting with '-'")
    r = run("inspect", "-dashed.safetensors")
    check(r.returncode == 2 and "unknown option '-dashed.safetensors'" in r.stderr, "without --: an option: %r" %
          r.stderr)

    # Usage errors: stderr, status 2, nothing on stdout, the culprit named.
    def usage(args, fragments, absent=()):
        r = run(*args)
        check(r.returncode == 2, "%s: exit 2, got %d" % (args, r.returncode))
        check(r.stdout == "", "%s: nothing on stdout: %r" % (args, r.stdout))
        for fragment in fragments:
            check(fragment in r.stderr, "%s: stderr has %r: %r" % (args, fragment, r.stderr))
        for fragment in absent:
            check(fragment not in r.stderr, "%s: stderr lacks %r: %r" % (args, fragment, r.stderr))
    usage(["inspect", example, "--verbose"], ["unknown option '--verbose'"], [example])
    usage(["inspekt", example], ["unknown command 'inspekt'", "did you mean 'inspect'?"])
    usage(["lod"], ["did you mean 'load'?"])
    usage(["load", example, "--verfy"], ["unknown option '--verfy'", "did you mean '--verify'?"])
    usage(["load", example, "--strategy=fast"], ["--strategy", "auto, mmap, read or direct", "'fast'"])
    usage(["load", example, "--device", "one"], ["--device: expected a whole number from 0 to 4294967295, got 'one'"],
          ["Could not convert"])
    usage(["load", example, "--world", "2", "--rank=-1"], ["--rank: expected a whole number", "got '-1'"])
    usage(["help", "lod"], ["did you mean 'load'?"])
    usage(["load", example, "--rank", "1"], ["--world"])
    usage(["frobnicate"], ["unknown command 'frobnicate'"], ["did you mean"])
    r = run("load", example, "--json", "--fast")
    check(r.returncode == 2 and json.loads(r.stderr.splitlines()[-1])["error"]["code"] == "Usage",
          "a usage error with --json is a JSON error: %r" % r.stderr)


def main():
    global EXE
    EXE, example = sys.argv[1], os.path.abspath(sys.argv[2])
    EXE = os.path.abspath(EXE)
    with tempfile.TemporaryDirectory(prefix="rootspan-terminal-") as tmp:
        test_command_line(tmp, example)
        test_help_fits(tmp)
        test_names_stay_apart(tmp)
        test_tables(tmp, example)
        test_progress(tmp)
        test_resize(tmp)
        test_ctrl_c(tmp)
        test_verify_mismatch(tmp)
    return report()


if __name__ == "__main__":
    sys.exit(main())
