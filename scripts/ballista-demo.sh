#!/usr/bin/env bash
# Issue 20, Ballista: a Ballista scheduler and two executors on loopback (one process, each a gRPC
# server on its own free port, the executors pulling tasks from the scheduler and fetching each
# other's shuffle output over Arrow Flight) run one GROUP BY over a directory of STREAMING .ald
# files; prints the answer, the tasks each executor ran (by stage), the wall time, and whether
# plain DataFusion gives the same answer (BENCHMARKS.md, "## Ballista").
#
#   bash scripts/ballista-demo.sh [--files N] [--chunks N] [--rows N] [--executors N] [--vcores N]
#
# Environment: PROFILE (dev; `release` builds the whole DataFusion and Ballista tree optimized,
# which takes long on a cold target directory). The table (4 files x 3 chunks x 20000 rows by
# default) is written to a temporary directory and removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-dev}
cargo run -q --profile "$profile" -p ald-ballista --example ballista-demo -- "$@"
