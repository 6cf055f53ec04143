#!/usr/bin/env bash
# A spool with damaged files: garbage, `{}` and a folder in queue/, entries whose name does not
# match their file name or is `../escape`, a garbage status.json and .sequence, later a FIFO as
# status.json and .sequence. `mpipe status`
# still shows the spool (rc 0, one warning line); the daemon moves each damaged file to
# quarantine/, records it as failed with why, runs the good experiment, and numbers a later
# submission after the highest number present (not #1). Usage: serve_damaged_spool.sh CONFIG
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/serve_lib.sh"
config=$1

submit "$config" --name good --set train.steps=3
entry=$(cat "$SPOOL/queue/000001-good.json")
printf '\001garbage' > "$SPOOL/queue/000100-junk.json"
echo '{}' > "$SPOOL/queue/000101-empty.json"
mkdir "$SPOOL/queue/000102-folder.json"
sed 's/"seq": 1/"seq": 103/; s/"name": "good"/"name": "other"/' <<< "$entry" > "$SPOOL/queue/000103-mismatch.json"
sed 's/"seq": 1/"seq": 104/; s/"name": "good"/"name": "..\/escape"/' <<< "$entry" > "$SPOOL/queue/000104-escape.json"
echo 'garbage' > "$SPOOL/status.json"
echo 'garbage' > "$SPOOL/.sequence"
damaged=(000100-junk.json 000101-empty.json 000102-folder.json 000103-mismatch.json 000104-escape.json)

status=0
"$MPIPE" status "$SPOOL" > "$WORK/status.out" 2> "$WORK/status.err" || status=$?
cat "$WORK/status.out" "$WORK/status.err"
[[ $status -eq 0 ]] || { echo "FAILED: status of a damaged spool exited with $status"; exit 1; }
warning="[warning] $SPOOL/status.json: not a status file: not valid JSON; showing what the spool's folders hold"
[[ $(wc -l < "$WORK/status.err") -eq 1 && $(cat "$WORK/status.err") == *"$warning" ]] ||
  { echo "FAILED: status warning"; exit 1; }
grep -qE "^good +queued " "$WORK/status.out" || { echo "FAILED: good not queued"; exit 1; }
for file in "${damaged[@]}"; do
  grep -E "^$file +failed " "$WORK/status.out" | grep -qF "$SPOOL/queue/$file: not a queue entry: " ||
    { echo "FAILED: $file not shown as failed"; exit 1; }
done
for reason in "it holds #103 'other', whose file name is 000103-other.json" \
  "its name '../escape' is not an experiment name"; do
  grep -qF "not a queue entry: $reason" "$WORK/status.out" || { echo "FAILED: no '$reason'"; exit 1; }
done

start_daemon "$WORK/serve.log"
wait_state good "done" "$WORK/serve.log"
for file in "${damaged[@]}"; do
  [[ $(field "$file" state) == failed && -e $SPOOL/quarantine/$file && ! -e $SPOOL/queue/$file ]] ||
    { cat "$WORK/serve.log"; echo "FAILED: $file not quarantined"; exit 1; }
  [[ $(field "$file" error) == "$SPOOL/queue/$file: not a queue entry: "*"; moved to $SPOOL/quarantine/$file" ]] ||
    { field "$file" error; echo "FAILED: $file error"; exit 1; }
done
[[ $(cat "$SPOOL/quarantine/status.json") == garbage ]] || { echo "FAILED: status.json not quarantined"; exit 1; }
grep -qF "[warning] $SPOOL/status.json: not a status file: not valid JSON; moved to $SPOOL/quarantine/status.json" "$WORK/serve.log" ||
  { cat "$WORK/serve.log"; echo "FAILED: no warning for status.json"; exit 1; }

# Numbering goes on after the highest number present, whatever .sequence held.
submit "$config" --name later --set train.steps=2 > "$WORK/submit.out" 2>&1
cat "$WORK/submit.out"
grep -qx "queued later (#105) in $SPOOL" "$WORK/submit.out" || { echo "FAILED: later not #105"; exit 1; }
wait_state later "done" "$WORK/serve.log"
signal_daemon TERM
wait_daemon "$WORK/serve.log"
# A FIFO as status.json, then as .sequence: `mpipe status`, `submit` and the daemon waited on it
# forever; now they warn and go on (each bounded by a timeout), and the daemon moves status.json
# to quarantine/.
mv "$SPOOL/status.json" "$WORK/status.json"
mkfifo "$SPOOL/status.json"
status=0
timeout 30 "$MPIPE" status "$SPOOL" > "$WORK/fifo.out" 2> "$WORK/fifo.err" || status=$?
cat "$WORK/fifo.out" "$WORK/fifo.err"
warning="[warning] $SPOOL/status.json: not a status file: not a regular file; showing what the spool's folders hold"
[[ $status -eq 0 && $(wc -l < "$WORK/fifo.err") -eq 1 && $(cat "$WORK/fifo.err") == *"$warning" ]] ||
  { echo "FAILED: status with a FIFO as status.json (exit status $status)"; exit 1; }
rm "$SPOOL/status.json" "$SPOOL/.sequence"
mv "$WORK/status.json" "$SPOOL/status.json"  # the record of #105, which .sequence no longer has
mkfifo "$SPOOL/.sequence"
status=0
timeout 30 "$MPIPE" submit "$SPOOL" "$config" --name fifo --set train.steps=2 > "$WORK/submit_fifo.out" 2>&1 ||
  status=$?
cat "$WORK/submit_fifo.out"
[[ $status -eq 0 ]] && grep -qx "queued fifo (#106) in $SPOOL" "$WORK/submit_fifo.out" &&
  grep -qF "[warning] $SPOOL/.sequence: not a regular file; going on from the entries the spool holds" "$WORK/submit_fifo.out" ||
  { echo "FAILED: submit with a FIFO as .sequence (exit status $status)"; exit 1; }
rm "$SPOOL/status.json" && mkfifo "$SPOOL/status.json"
start_daemon "$WORK/serve_fifo.log"
for _ in $(seq 600); do  # status.json replaced by a file (reading the FIFO would block)
  [[ -f $SPOOL/status.json ]] && break
  sleep 0.1
done
wait_state fifo "done" "$WORK/serve_fifo.log"
[[ -p $SPOOL/quarantine/status.json.2 ]] || { echo "FAILED: the FIFO not quarantined"; exit 1; }
grep -qF "[warning] $SPOOL/status.json: not a status file: not a regular file; moved to $SPOOL/quarantine/status.json.2" "$WORK/serve_fifo.log" ||
  { cat "$WORK/serve_fifo.log"; echo "FAILED: no warning for the FIFO"; exit 1; }
signal_daemon TERM
wait_daemon "$WORK/serve_fifo.log"
echo "serve_damaged_spool: status shows a damaged spool; 5 damaged entries and status.json quarantined, the good experiments done, numbering kept; a FIFO as status.json and .sequence read by none"
