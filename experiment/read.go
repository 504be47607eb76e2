package experiment

import (
	"encoding/json"
	"fmt"

	"github.com/lenspec/lenspec/results"
	"github.com/lenspec/lenspec/verify"
)

// defaultDataSeed is the Multi-MNIST generation seed every schema-0 record
// was made with (the CLI offered no other by default).
const defaultDataSeed = 1

// attackRecord0 is the CLI's attack record before schema 1.
type attackRecord0 struct {
	Model        string  `json:"model"`
	Split        string  `json:"split"`
	Image        int     `json:"image"`
	Eps          float64 `json:"eps"`
	Method       string  `json:"method"`
	Loss         string  `json:"loss"`
	Label        []int   `json:"label"`
	K            int     `json:"k"`
	OrigLength   int     `json:"orig_length"`
	OrigTokens   []int   `json:"orig_tokens"`
	AdvLength    int     `json:"adv_length"`
	AdvTokens    []int   `json:"adv_tokens"`
	Stopped      bool    `json:"stopped"`
	MaxSteps     int     `json:"max_steps"`
	Success      bool    `json:"success"`
	MinRelMargin float64 `json:"min_rel_margin"`
	Found32      int     `json:"found_float32_length"`
	Evals        int64   `json:"evals"`
	Steps        int     `json:"pgd_steps"`
	Restarts     int     `json:"restarts"`
	Budget       int     `json:"budget"`
	Seed         uint64  `json:"seed"`
	Seconds      float64 `json:"seconds"`
	Witness      string  `json:"witness"`
	WitnessPNG   string  `json:"witness_png"`
	LengthCounts []int64 `json:"length_counts"`
}

func (o attackRecord0) migrate() AttackRecord {
	return AttackRecord{
		SchemaVersion: SchemaVersion, Model: o.Model, Data: DataRef{Name: "multimnist", Split: o.Split, Seed: defaultDataSeed},
		Sample: o.Image, Eps: o.Eps, Method: o.Method,
		Settings:    AttackSettings{MaxLen: -1, MaxSteps: o.MaxSteps, Budget: o.Budget, Seed: o.Seed, Loss: o.Loss, Restarts: o.Restarts},
		AttackImage: &AttackImage{Label: o.Label, OrigTokens: o.OrigTokens, AdvTokens: o.AdvTokens, Steps: o.Steps, WitnessPNG: o.WitnessPNG},
		K:           o.K, OrigLength: o.OrigLength, AdvLength: o.AdvLength, Stopped: o.Stopped, Success: o.Success,
		MinRelMargin: o.MinRelMargin, Found32: o.Found32, Evals: o.Evals, Seconds: o.Seconds,
		Witness: o.Witness, LengthCounts: o.LengthCounts,
	}
}

// verifyRecord0 is the CLI's verification record before schema 1.
type verifyRecord0 struct {
	Model            string         `json:"model"`
	Split            string         `json:"split"`
	Image            int            `json:"image"`
	Eps              float64        `json:"eps"`
	K                int            `json:"k"`
	Label            []int          `json:"label"`
	Bounds           string         `json:"bounds"`
	Verdict          string         `json:"verdict"`
	Stage            string         `json:"stage"`
	Seconds          float64        `json:"seconds"`
	BoundSeconds     float64        `json:"bound_seconds"`
	ProvenBound      *float64       `json:"proven_bound"`
	Incumbent        *float64       `json:"incumbent"`
	Nodes            int64          `json:"nodes"`
	Binaries         int            `json:"binaries"`
	ReLUBinaries     int            `json:"relu_binaries"`
	UnstableInterval int            `json:"unstable_interval"`
	Unstable         int            `json:"unstable"`
	Witness          string         `json:"witness"`
	WitnessLength    *int           `json:"witness_length"`
	WitnessTokens    []int          `json:"witness_tokens"`
	Reason           string         `json:"reason"`
	MPS              string         `json:"mps"`
	Phases           []verify.Phase `json:"phases"`
	Timeout          float64        `json:"timeout"`
	Seed             uint64         `json:"seed"`
}

func (o verifyRecord0) migrate() VerifyRecord {
	return VerifyRecord{
		SchemaVersion: SchemaVersion, Model: o.Model, Data: DataRef{Name: "multimnist", Split: o.Split, Seed: defaultDataSeed},
		Sample: o.Image, Eps: o.Eps, K: o.K,
		Settings: VerifySettings{MaxLen: -1, Bounds: o.Bounds, Timeout: o.Timeout, Seed: o.Seed},
		Label:    o.Label, Verdict: o.Verdict, Stage: o.Stage, Seconds: o.Seconds, BoundSeconds: o.BoundSeconds,
		ProvenBound: o.ProvenBound, Incumbent: o.Incumbent, Nodes: o.Nodes, Binaries: o.Binaries, ReLUBinaries: o.ReLUBinaries,
		UnstableInterval: o.UnstableInterval, Unstable: o.Unstable, Witness: o.Witness, WitnessLength: o.WitnessLength,
		WitnessTokens: o.WitnessTokens, Reason: o.Reason, MPS: o.MPS, Phases: o.Phases,
	}
}

// ReadAttackRecords reads an attack results file of any schema version,
// migrating older records to the current type. A migrated record has the
// current schema_version, an empty model_sha256 (schema 0 named models by
// path only) and zero for the settings schema 0 did not record; its data
// seed was always 1.
func ReadAttackRecords(path string) ([]AttackRecord, error) {
	return readRecords(path, decodeAttack)
}

// ReadVerifyRecords reads a verification results file of any schema
// version, migrating older records.
func ReadVerifyRecords(path string) ([]VerifyRecord, error) {
	return readRecords(path, decodeVerify)
}

// decodeAttack decodes an attack record of either input kind. Text
// records have schema 1 only; those from before src_len get it from their
// source ids. A current image record is decoded once; others go through
// decode (migration, schema checks).
func decodeAttack(raw json.RawMessage) (AttackRecord, error) {
	var r AttackRecord
	if err := json.Unmarshal(raw, &r); err == nil {
		switch {
		case r.IsText() && r.SchemaVersion != SchemaVersion:
			return r, fmt.Errorf("text attack record of schema version %d; this lenspec reads %d", r.SchemaVersion, SchemaVersion)
		case r.IsText():
			if r.SrcLen == 0 {
				r.SrcLen = len(r.SrcIDs)
			}
			return r, nil
		case r.SchemaVersion == SchemaVersion:
			return r, nil
		}
	}
	return decode(raw, func(o attackRecord0) AttackRecord { return o.migrate() })
}

func decodeVerify(raw json.RawMessage) (VerifyRecord, error) {
	return decode(raw, func(o verifyRecord0) VerifyRecord { return o.migrate() })
}

// decode decodes one record of any known schema version.
func decode[R, R0 any](raw json.RawMessage, migrate func(R0) R) (R, error) {
	var r R
	var v struct {
		SchemaVersion int `json:"schema_version"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return r, err
	}
	switch {
	case v.SchemaVersion < 0 || v.SchemaVersion > SchemaVersion:
		return r, fmt.Errorf("schema_version %d; this lenspec reads up to %d (upgrade lenspec)", v.SchemaVersion, SchemaVersion)
	case v.SchemaVersion == 0:
		var o R0
		if err := json.Unmarshal(raw, &o); err != nil {
			return r, fmt.Errorf("schema 0: %w", err)
		}
		return migrate(o), nil
	}
	err := json.Unmarshal(raw, &r)
	return r, err
}

func readRecords[R any](path string, dec func(json.RawMessage) (R, error)) ([]R, error) {
	raws, err := results.Read[json.RawMessage](path)
	if err != nil {
		return nil, err
	}
	out := make([]R, 0, len(raws))
	for i, raw := range raws {
		r, err := dec(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}
