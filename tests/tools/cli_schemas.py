"""The rootspan program's JSON outputs against their schemas (config/schemas/).

Every CLI test runs the program through a helper that hands each result to
check_output(): with --json, a successful run's stdout must validate against
its subcommand's schema, and a failed run's last stderr line against the
error schema. Imported by the tools, materialize and plugins suites' tests.
"""
import json
import os

from jsonschema import Draft202012Validator

SCHEMA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config", "schemas")
SUBCOMMANDS = ("version", "providers", "inspect", "load", "plan", "hash")
SCHEMA_OF = {"hash": "digests"}  # a subcommand whose output has another schema's name
_validators = {}


def validator(name):
    if name not in _validators:
        with open(os.path.join(SCHEMA_DIR, name + ".schema.json")) as f:
            schema = json.load(f)
        Draft202012Validator.check_schema(schema)
        _validators[name] = Draft202012Validator(schema)
    return _validators[name]


def problems_of(name, document):
    return ["%s schema: %s at %s" % (name, e.message, "/".join(str(p) for p in e.absolute_path))
            for e in validator(name).iter_errors(document)]


def check_output(args, returncode, stdout, stderr):
    """The schema problems of one run's JSON output; [] when it did not ask
    for JSON (no --json before "--")."""
    args = [a.decode() if isinstance(a, bytes) else str(a) for a in args]
    options = args[:args.index("--")] if "--" in args else args
    if "--json" not in options:
        return []
    if isinstance(stdout, bytes):
        stdout, stderr = stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")
    subcommand = next((a for a in options if a in SUBCOMMANDS), None)
    found = []
    if stdout.strip() and subcommand is not None:
        try:
            found += problems_of(SCHEMA_OF.get(subcommand, subcommand), json.loads(stdout))
        except ValueError as e:
            found.append("%s: stdout is not one JSON document: %s" % (subcommand, e))
    if returncode != 0:
        lines = [line for line in stderr.splitlines() if line.strip()]
        try:
            found += problems_of("error", json.loads(lines[-1]))
        except (ValueError, IndexError) as e:
            found.append("exit %d: the last stderr line is not a JSON error: %r (%s)" % (returncode, stderr[-300:], e))
    return ["%s: %s" % (" ".join(args[:4]), p) for p in found]
