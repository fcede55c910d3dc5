#!/bin/sh
# env_dump: prints its whole environment, as an artifact that wants qualify's secrets would
# (a token exported for the build, a CI runner's credentials). Row "secrets" of
# corpus/adversary/README.md. Usage: env_dump.sh
env
