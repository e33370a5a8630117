#!/usr/bin/env python3
"""Runs the `run:` steps of the repository's action.yml here, as GitHub Actions runs a
composite action, so CI tests the action's own text (`.ci/run`, against the Python
example). Steps that `uses:` another action (the cache, the upload) are skipped and named.

    scripts/run-action.py --input adapter='python3 adapter.py' --input profile=operator \
        --input binary=target/release/session-conformance --input out=target/action/out \
        --temp target/action/tmp --summary target/action/summary.md

Inputs take the action's defaults; `${{ inputs.X }}`, `${{ github.action_path }}`,
`${{ runner.temp }}` and `${{ steps.ID.outputs.X }}` are the expressions it evaluates in a
step's `env`, and any other expression there is an error. A step's `if:` is not evaluated:
the action's `run:` steps have none. Exit status: the first failing step's, else 0.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--temp", required=True, help="RUNNER_TEMP (made when missing)")
    parser.add_argument("--summary", required=True, help="GITHUB_STEP_SUMMARY (appended to)")
    args = parser.parse_args()

    with open(os.path.join(ROOT, "action.yml")) as f:
        action = yaml.safe_load(f)
    inputs = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    for item in args.input:
        name, sep, value = item.partition("=")
        if not sep or name not in inputs:
            sys.exit(f"run-action: --input {item}: not NAME=VALUE of an input of action.yml")
        inputs[name] = value
    missing = [n for n, spec in action["inputs"].items() if spec.get("required") and not inputs[n]]
    if missing:
        sys.exit(f"run-action: required inputs not given: {', '.join(missing)}")

    os.makedirs(args.temp, exist_ok=True)
    context = {
        "github.action_path": ROOT,
        "runner.temp": os.path.abspath(args.temp),
    }
    context.update({f"inputs.{n}": v for n, v in inputs.items()})
    for step in action["runs"]["steps"]:
        name = step.get("name", step.get("id", "a step"))
        if "uses" in step:
            print(f"== {name}: skipped here (uses: {step['uses']})", flush=True)
            continue
        print(f"== {name}", flush=True)
        if step.get("shell") != "bash":
            sys.exit(f"run-action: {name}: only `shell: bash` steps are run here")
        with tempfile.NamedTemporaryFile("r", dir=args.temp, delete=False) as output:
            output_path = output.name
        env = dict(os.environ)
        env.update(
            GITHUB_ACTION_PATH=ROOT,
            GITHUB_OUTPUT=output_path,
            GITHUB_STEP_SUMMARY=os.path.abspath(args.summary),
            RUNNER_TEMP=context["runner.temp"],
        )
        for key, value in step.get("env", {}).items():
            env[key] = evaluate(str(value), context, name)
        status = subprocess.call(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            env=env,
        )
        with open(output_path) as f:
            for line in f:
                key, sep, value = line.rstrip("\n").partition("=")
                if sep and "id" in step:
                    context[f"steps.{step['id']}.outputs.{key}"] = value
        os.unlink(output_path)
        if status != 0:
            print(f"run-action: {name}: exit {status}", file=sys.stderr)
            return status
    return 0


def evaluate(text, context, step):
    def value(match):
        expression = match.group(1)
        if expression.startswith("steps."):
            return context.get(expression, "")
        if expression not in context:
            sys.exit(f"run-action: {step}: cannot evaluate ${{{{ {expression} }}}}")
        return context[expression]

    return EXPRESSION.sub(value, text)


if __name__ == "__main__":
    sys.exit(main())
