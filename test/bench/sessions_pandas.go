package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// analysisCSV is the analysis's data file: 1 MB of sales rows, some dirty.
const analysisCSV = "sales.csv"

// analysisSteps are the five steps of the analysis, as an agent sends them
// cell by cell: load, clean, group, fit, plot. Each refers to what the last
// left; a one-shot call of step i runs steps 0..i on a fresh load.
var analysisSteps = []string{
	`import pandas as pd
df = pd.read_csv("sales.csv")
len(df)`,
	`df = df.dropna()
df["region"] = df["region"].str.strip().str.lower()
df = df[df["units"] >= 0]
df["revenue"] = df["units"] * df["price"]
len(df)`,
	`by_region = df.groupby("region")["revenue"].sum().round(2)
by_region.to_dict()`,
	`import numpy as np
slope, intercept = np.polyfit(df["price"], df["units"], 1)
round(float(slope), 4)`,
	`import matplotlib.pyplot as plt
ax = by_region.plot(kind="bar", title="Revenue by region")
plt.savefig("revenue.png")
plt.close()`,
}

// salesCSV makes about size bytes of sales rows, the same every run: a
// date, a region (some with stray spaces and capitals), units (some
// negative, some missing) and a price.
func salesCSV(size int) []byte {
	rng := rand.New(rand.NewPCG(26, 1))
	regions := []string{"north", "south", "east", "west", " North", "south "}
	var b bytes.Buffer
	b.WriteString("date,region,units,price\n")
	for day := 0; b.Len() < size; day++ {
		units := fmt.Sprint(rng.IntN(200) - 5)
		if rng.IntN(50) == 0 {
			units = ""
		}
		fmt.Fprintf(&b, "2026-%02d-%02d,%s,%s,%.2f\n", 1+day/28%12, 1+day%28, regions[rng.IntN(len(regions))], units, 1+rng.Float64()*99)
	}
	return b.Bytes()
}

// analysis runs the five steps rounds times each way: five calls in one
// data session (the first sends the CSV), and five one-shot calls in the
// data environment that each send the CSV and redo the steps before.
func (r *sessionsReport) analysis(ctx context.Context, s *service, rounds int) error {
	csv := salesCSV(1 << 20)
	progress("sessions: a %d-step pandas analysis of %d KiB of CSV, %d rounds, in a data session and as one-shot calls", len(analysisSteps), len(csv)>>10, rounds)
	for i := 0; i < rounds && ctx.Err() == nil; i++ {
		var round pandasRound
		var err error
		if round.session, err = analysisInSession(s, csv); err != nil {
			return fmt.Errorf("analysis in a session: %w", err)
		}
		if round.oneShot, err = analysisOneShot(s, csv); err != nil {
			return fmt.Errorf("analysis one-shot: %w", err)
		}
		r.pandas = append(r.pandas, round)
	}
	return nil
}

// analysisInSession opens a data session once its pool is warm (the open
// is not timed: the steps are) and runs the steps in it.
func analysisInSession(s *service, csv []byte) ([]time.Duration, error) {
	if err := waitPoolFull(context.Background(), s); err != nil {
		return nil, err
	}
	id, _, err := s.openSession("data")
	if err != nil {
		return nil, err
	}
	defer s.closeSession(id)
	var out []time.Duration
	for i, code := range analysisSteps {
		body := map[string]any{"code": code}
		if i == 0 {
			body["files"] = []fileIn{{Name: analysisCSV, Content: csv}}
		}
		a, d, err := s.callAt(sessionPath(id), body)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		if err := checkStep(i, a, a.Result); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// analysisOneShot runs step i as one call of steps 0..i, the CSV sent
// each time.
func analysisOneShot(s *service, csv []byte) ([]time.Duration, error) {
	var out []time.Duration
	for i := range analysisSteps {
		body := map[string]any{"environment": "data", "code": strings.Join(analysisSteps[:i+1], "\n"),
			"files": []fileIn{{Name: analysisCSV, Content: csv}}}
		a, d, err := s.callAt("/v1/code", body)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", i+1, err)
		}
		none := "" // one-shot runs answer no result: the last step's chart is what is checked
		if err := checkStep(i, a, &none); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// checkStep checks step i's answer: a result for the steps before the
// plot, and the plot's PNG.
func checkStep(i int, a sessionAnswer, result *string) error {
	if i < len(analysisSteps)-1 {
		if result == nil {
			return fmt.Errorf("step %d answered no result", i+1)
		}
		return nil
	}
	for _, f := range a.Files {
		if f.Name == "revenue.png" && bytes.HasPrefix(f.Content, pngMagic) {
			return nil
		}
	}
	return fmt.Errorf("the plot's PNG did not come back (%d files)", len(a.Files))
}
