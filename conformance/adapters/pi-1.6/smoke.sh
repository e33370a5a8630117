#!/bin/sh
# Smoke test for the pi 1.6 adapter: pi-mono's smoke test, run through this folder's run.sh.
here=$(cd "$(dirname "$0")" && pwd)
exec "$here/../pi-mono/smoke.sh" "$here/run.sh"
