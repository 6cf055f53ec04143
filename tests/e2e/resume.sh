#!/usr/bin/env bash
# Resume: 3 steps, stop, resume to 6 (on another number of stages) gives the same weights as
# 6 steps straight. Usage: resume.sh CONFIG
source "$(dirname "$0")/lib.sh"
config=$1
train 2 straight "$config" --set train.steps=6
train 2 resumed "$config" --set train.steps=3
train 4 resumed "$config" --set train.steps=6 --resume
same straight resumed
echo "resume: 3 + 3 steps (2 then 4 stages) == 6 steps"
