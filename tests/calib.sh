#!/usr/bin/env bash
# calib.sh: `pipegrid calibrate` and `pipegrid validate` end to end on the
# measured data shipped in data/validation/ (default binary src/pipegrid).
# validate runs the surrogate here (--surrogate: the simulator's agreement with it and its
# own errors are tests/parity.sh's).  Kept fast for CI: calibrate fits a small deterministic fit part (3 % of
# vTrain's 1,440 rows) with 3-fold cross-validation, and the held-out check
# fits with a given weight (the cross-validated choice's own independence
# from held-out rows is tests/test_calib's); the full fit is the command in
# docs/validation.md.
set -u
BIN=${1:-src/pipegrid}
case $BIN in /*) ;; *) BIN="$PWD/$BIN" ;; esac
. "$(dirname "$0")/lib.sh" calib
DATA="$TEST_HERE/../data/validation"
V="$DATA/vtrain/ground_truth_single.csv"
cd "$TMP" || exit 1
FIT=(--fit-fraction 0.03 --folds 3)
FIT_SMALL=(--fit-fraction 0.02 --folds 2)
FIXED=(--fit-fraction 0.05 --max-weight 0.5)

# ---- validate: the shipped a100-80g file on its held-out rows (fit fraction 0.4,
# docs/validation.md); the 8 % MAPE target holds there, the 25 % worst-row one does not
# (37 %: the documented gap), so only MAPE gates here ----
expect_rc "validate vTrain single-node with the shipped a100-80g" 0 "$BIN" validate --surrogate "$V" --fit-fraction 0.4 --max-mape 0.08
if grep -Eq "^  held-out rows: +849 " "$TMP/out"; then ok "validate reports the 849 held-out rows"
else not_ok "validate reports the 849 held-out rows" "$(head -5 "$TMP/out")"; fi
if grep -Eq "^  MAPE floor: +all rows 0\.00 %, fit 0\.00 %, held-out 0\.00 %" "$TMP/out"; then ok "vTrain's jobs, measured once each, have no floor"
else not_ok "vTrain's jobs, measured once each, have no floor" "$(head -6 "$TMP/out")"; fi
expect_rc "validate the default split" 0 "$BIN" validate --surrogate "$V"
if grep -Eq "^  held-out rows: +1000 " "$TMP/out"; then ok "the default split holds out 1,000 rows"
else not_ok "the default split holds out 1,000 rows" "$(head -5 "$TMP/out")"; fi
# several files at once: one line per file and part, skipped rows with their reason
M="$DATA/modern/mbridge_perf_summary.csv"
expect_rc "validate two summaries on h100-sxm" 0 "$BIN" validate --surrogate "$DATA/modern/nemo_perf_summary_2407.csv" "$M" --gpu h100-sxm
if [ "$(grep -Ec "^  (nemo_perf_summary_2407|mbridge_perf_summary)\.csv +(fit|held-out) " "$TMP/out")" = 4 ]; then
    ok "validate reports fit and held-out errors per file"
else not_ok "validate reports fit and held-out errors per file" "$(head -12 "$TMP/out")"; fi
# the floor: Megatron-Bridge republishes jobs across releases at other times (a floor above 0 on its
# held-out rows); vTrain measured each job once (0)
if grep -Eq "^  mbridge_perf_summary\.csv +held-out .* floor +[1-9][0-9]*\.[0-9]+ %" "$TMP/out" &&
   grep -Eq "^  MAPE floor: +all rows ([1-9][0-9]*\.[0-9]+|0\.[0-9]*[1-9][0-9]*) %" "$TMP/out"; then
    ok "validate reports the MAPE floor of jobs measured more than once"
else not_ok "validate reports the MAPE floor of jobs measured more than once" "$(head -12 "$TMP/out")"; fi
# 84: 73 pretraining rows, 9 of Llama-3.1-405B's edge-chunk layout, 2 LoRA
if grep -Eq "^ +84 x GPU type gb200: this run predicts h100-sxm" "$TMP/out"; then ok "rows of other GPU types are listed, not dropped"
else not_ok "rows of other GPU types are listed, not dropped" "$(grep -A3 skipped "$TMP/out")"; fi
# the releases NVIDIA documented as regressions of a configuration (data/validation/modern/regressions.csv) are
# listed with their source, and predicted with --with-regressions (two H100 rows: 80 -> 82; 75 since GPT-OSS's
# five H100 rows are predicted, models2026, 79 since Nemotron-3 Nano's four, 80 since DeepSeek-V3's one, 79 since
# that row runs its recipe's pipeline layout, which the surrogate does not model: --surrogate lists it as skipped)
if grep -Eq "^ +1 x documented software regression: .*issues/1998" "$TMP/out" && grep -Eq "^  all rows: +79 " "$TMP/out"
then ok "documented regressions are listed as skipped, with their source"
else not_ok "documented regressions are listed as skipped, with their source" "$(grep -E "all rows|regression" "$TMP/out")"; fi
expect_rc "validate --with-regressions" 0 "$BIN" validate --surrogate "$DATA/modern/nemo_perf_summary_2407.csv" "$M" --gpu h100-sxm \
    --with-regressions
if grep -Eq "^  all rows: +81 " "$TMP/out" && ! grep -q "documented software regression" "$TMP/out"
then ok "--with-regressions predicts them too"
else not_ok "--with-regressions predicts them too" "$(grep -E "all rows|regression" "$TMP/out")"; fi
expect_rc "validate --format csv" 0 "$BIN" validate --surrogate "$V" --format csv
n=$(grep -c ',holdout,\|,fit,' "$TMP/out")
if [ "$n" = 1440 ]; then ok "validate --format csv: one line per measured row"; else not_ok "validate --format csv: one line per measured row" "$n lines"; fi
cp "$TMP/out" "$TMP/rows.csv"
# limits the model misses give exit 1 (for CI gates)
expect_rc "validate exits 1 when the held-out rows miss the limits" 1 "$BIN" validate --surrogate "$V" --max-mape 0.001
expect_err "validate says which limit was missed" "held-out MAPE .* miss the limits"

# ---- calibrate: a fitted file that validate can read back ----
expect_rc "calibrate a small fit part with cross-validation" 0 "$BIN" calibrate "$V" "${FIT[@]}" -o "$TMP/fit.yaml"
expect_err "calibrate reports the cross-validated choice" "max-weight .* chosen by 3-fold CV in the fit part"
if grep -Fq "max(worst file's CV MAPE / 0.08, all rows' CV MAPE / 0.05), smallest wins" "$TMP/fit.yaml"; then
    ok "the CV score is issue 15's acceptance (every file 8 %, all rows 5 %)"
else not_ok "the CV score is issue 15's acceptance (every file 8 %, all rows 5 %)" "$(grep -m2 "score" "$TMP/fit.yaml")"; fi
# (only the score's terms are checked here: a smaller fit part and 2 folds cross-validate in
# a quarter of the fit above's time)
expect_rc "calibrate with a largest-error target" 0 "$BIN" calibrate "$V" "${FIT_SMALL[@]}" --max-error 0.25 \
    --max-overall-mape 0.06 -o "$TMP/fitmax.yaml"
if grep -Fq "max(worst file's CV MAPE / 0.08, all rows' CV MAPE / 0.06, CV max error / 0.25)" "$TMP/fitmax.yaml"; then
    ok "--max-error and --max-overall-mape enter the CV score"
else not_ok "--max-error and --max-overall-mape enter the CV score" "$(grep -m2 "score" "$TMP/fitmax.yaml")"; fi
expect_rc "calibrate with a bad overall target exits 2" 2 "$BIN" calibrate "$V" --max-overall-mape 0
expect_err "calibrate names the bad option" "option '--max-overall-mape': '0' must be a number"
if grep -q "source: \"fitted .* on 39 of 1440 measured rows" "$TMP/fit.yaml"; then ok "fitted parameters record how they were fitted"
else not_ok "fitted parameters record how they were fitted" "$(grep -m2 source "$TMP/fit.yaml")"; fi
if grep -A1 "peak_flops:" "$TMP/fit.yaml" | grep -q "fitted"; then not_ok "datasheet numbers are not fitted"
else ok "datasheet numbers are not fitted"; fi
expect_rc "validate reads the calibrated file" 0 "$BIN" validate --surrogate "$V" --gpu "$TMP/fit.yaml" --fit-fraction 0.03
if grep -Eq "^  fit rows: +39 " "$TMP/out"; then ok "validate's fit part is calibrate's (same fraction)"
else not_ok "validate's fit part is calibrate's (same fraction)" "$(head -4 "$TMP/out")"; fi

# ---- held-out rows do not change the fit: double their measured times ----
# The CSV of validate --fit-fraction 0.05 names each row's part and its line.
expect_rc "validate --format csv with the small fit part" 0 "$BIN" validate --surrogate "$V" --fit-fraction 0.05 --format csv
awk -F, 'NR > 1 && $2 == "holdout" { print $1 }' "$TMP/out" >"$TMP/heldout_lines"
awk -F, -v OFS=, 'NR == FNR { h[$1] = 1; next } FNR in h { $NF = $NF * 2 } { print }' \
    "$TMP/heldout_lines" "$V" >"$TMP/perturbed.csv"
if [ "$(wc -l <"$TMP/heldout_lines")" -gt 1000 ] && ! cmp -s "$V" "$TMP/perturbed.csv"; then
    ok "perturbed copy differs in the held-out rows only"
else not_ok "perturbed copy differs in the held-out rows only"; fi
expect_rc "calibrate the original with a given weight" 0 "$BIN" calibrate "$V" "${FIXED[@]}" -o "$TMP/fit1.yaml"
expect_rc "calibrate the perturbed copy" 0 "$BIN" calibrate "$TMP/perturbed.csv" "${FIXED[@]}" -o "$TMP/fit2.yaml"
values() { grep -o "value: [^,]*\|key: \"[^\"]*\", factor: [^,]*" "$1"; }
if [ "$(values "$TMP/fit1.yaml")" = "$(values "$TMP/fit2.yaml")" ] && [ "$(values "$TMP/fit2.yaml" | wc -l)" -gt 5 ]; then
    ok "held-out measurements do not change the fitted parameters"
else not_ok "held-out measurements do not change the fitted parameters" "$(diff "$TMP/fit1.yaml" "$TMP/fit2.yaml" | head -6)"; fi
# ... nor the measured layer profiles (with a given weight calibrate fits them without selection)
if grep -q "^layer_profiles:" "$TMP/fit1.yaml" && [ "$(grep -c "factor: " "$TMP/fit1.yaml")" -gt 0 ]; then
    ok "the fixed-weight fit has measured layer profiles (compared above)"
else not_ok "the fixed-weight fit has measured layer profiles (compared above)" "$(tail -3 "$TMP/fit1.yaml")"; fi
expect_rc "calibrate --no-layer-profiles" 0 "$BIN" calibrate "$V" "${FIXED[@]}" --no-layer-profiles -o "$TMP/fit3.yaml"
if ! grep -q "^layer_profiles:" "$TMP/fit3.yaml" && grep -q "Measured layer profiles: none (--no-layer-profiles)" "$TMP/fit3.yaml" &&
   [ "$(grep -o "value: [^,]*" "$TMP/fit3.yaml")" = "$(grep -o "value: [^,]*" "$TMP/fit1.yaml")" ]; then
    ok "--no-layer-profiles fits the same parameters and no profile"
else not_ok "--no-layer-profiles fits the same parameters and no profile" "$(diff "$TMP/fit1.yaml" "$TMP/fit3.yaml" | head -6)"; fi

# ---- validate with measured layer profiles: the rows of profiled shapes and the others apart ----
expect_rc "validate a file with layer profiles" 0 "$BIN" validate --surrogate "$V" --gpu "$TMP/fit1.yaml" --fit-fraction 0.05
if grep -Eq "^  profiled: +[1-9][0-9]* +MAPE" "$TMP/out" && grep -Eq "^  analytic: +[0-9]+ +MAPE" "$TMP/out"; then
    ok "validate reports the held-out rows of profiled shapes and of the others"
else not_ok "validate reports the held-out rows of profiled shapes and of the others" "$(head -8 "$TMP/out")"; fi
held_with=$(grep -E "^  held-out rows:" "$TMP/out")
expect_rc "validate --no-layer-profiles" 0 "$BIN" validate --surrogate "$V" --gpu "$TMP/fit1.yaml" --fit-fraction 0.05 --no-layer-profiles
if ! grep -q "^  profiled:" "$TMP/out" && [ "$(grep -E "^  held-out rows:" "$TMP/out")" != "$held_with" ]; then
    ok "--no-layer-profiles predicts every layer analytically"
else not_ok "--no-layer-profiles predicts every layer analytically" "$(head -6 "$TMP/out")"; fi
expect_rc "validate --format csv with layer profiles" 0 "$BIN" validate --surrogate "$V" --gpu "$TMP/fit1.yaml" --fit-fraction 0.05 \
    --format csv
if awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "layer_profile") c = i; next }
            $c > 0 { p++ } END { exit !(c > 0 && p > 0) }' "$TMP/out"; then
    ok "validate --format csv gives each row's layer profile"
else not_ok "validate --format csv gives each row's layer profile" "$(head -2 "$TMP/out")"; fi

# a parameter said to be calibrate's fixed starting value is that value in every fit
# (one the fit drove to about 0 moves no prediction afterwards, yet it was fitted)
unfitted() { grep "fixed starting value" "$1" | grep -o "^ *[a-z0-9_]*: {value: [^,]*" | sort; }
if [ -n "$(unfitted "$TMP/fit1.yaml")" ] && [ "$(unfitted "$TMP/fit.yaml")" = "$(unfitted "$TMP/fit1.yaml")" ]; then
    ok "parameters said unfitted keep one value in two different fits"
else not_ok "parameters said unfitted keep one value in two different fits" \
    "$(diff <(unfitted "$TMP/fit.yaml") <(unfitted "$TMP/fit1.yaml") | head -6)"; fi

# ---- bad input: a clear message and exit 2 ----
expect_rc "calibrate of a missing file exits 2" 2 "$BIN" calibrate "$TMP/none.csv"
expect_err "calibrate names the missing file" "none.csv: cannot open"
printf '# GPUs,global batch\n2,16\n' >"$TMP/bad.csv"
expect_rc "validate of a CSV without its columns exits 2" 2 "$BIN" validate --surrogate "$TMP/bad.csv"
expect_err "validate names file, line and column" "bad.csv:1: key 'micro batch': missing column"
expect_rc "calibrate with too few fit rows for the folds exits 2" 2 "$BIN" calibrate "$V" --fit-fraction 0.001
expect_err "calibrate says the fit part is too small" "fewer than 5 folds"

test_summary
