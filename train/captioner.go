package train

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/lenspec/lenspec/model"
)

// CaptionerRun configures Captioner: the run's Options (Captioner sets
// their CheckpointDir) and where the model goes.
type CaptionerRun struct {
	Options
	// Out is the model directory written at the end; its checkpoint
	// (Out/checkpoint) lives there until then, so a rerun resumes.
	Out string
	// Init names the model d was loaded from for fine-tuning ("": trained
	// from scratch); the training record keeps it.
	Init string
	// DistillFrom names the teacher model (LoadTeacher loads it into
	// Options.Teacher); "" distils nothing.
	DistillFrom string
	// Record is added to the training record in the model's config.json
	// (how the data were drawn and augmented, and "command", the command
	// line that reproduces the model: RebuildCommand).
	Record map[string]any
	// Probe, if set, measures the model after every epoch (before that
	// epoch's checkpoint): the verifier's count of images it proves at
	// the training radius, say (experiment.CertifyProbe), which the
	// certified loss's own count understates. Its last measurement goes
	// into the training record under "probe" and into the result.
	Probe func(ctx context.Context, epoch int, d model.Decoder[float32]) (any, error)
}

// CaptionerResult is what Captioner measured: the wall time and final
// loss of this run, and greedy decoding of the test and training sets.
type CaptionerResult struct {
	Seconds, Loss float64
	Test, Train   Eval
	// Probe is the run's Probe after the last epoch (nil without one).
	Probe any
}

// Captioner trains the Multi-MNIST captioner d on src, evaluates it on
// test and on the training set (trainEval: src without augmentation),
// writes it with its training record (its settings and run.Record) to
// run.Out and removes the checkpoint.
func Captioner(ctx context.Context, d model.Decoder[float32], src, trainEval, test Source[float32], run CaptionerRun) (CaptionerResult, error) {
	opt := run.Options
	opt.CheckpointDir = filepath.Join(run.Out, "checkpoint")
	start := time.Now()
	var res CaptionerResult
	var err error
	probed := 0 // the epoch res.Probe measured
	if run.Probe != nil {
		end := opt.EpochEnd
		opt.EpochEnd = func(epoch int) error {
			if end != nil {
				if err := end(epoch); err != nil {
					return err
				}
			}
			p, err := run.Probe(ctx, epoch, d)
			res.Probe, probed = p, epoch
			return err
		}
	}
	if res.Loss, err = Fit(ctx, d, src, opt); err != nil {
		return res, err
	}
	if run.Probe != nil && probed != opt.Epochs {
		// Resumed after the last epoch's checkpoint: measure the final
		// weights here, so the record has the probe whatever the run's
		// interruptions.
		if res.Probe, err = run.Probe(ctx, opt.Epochs, d); err != nil {
			return res, err
		}
	}
	res.Seconds = time.Since(start).Seconds()
	if res.Test, err = Evaluate(ctx, d, test, 0, nil); err != nil {
		return res, err
	}
	if res.Train, err = Evaluate(ctx, d, trainEval, 0, nil); err != nil {
		return res, err
	}
	rec := captionerRecord(run)
	rec["seconds"], rec["test_sequence_accuracy"], rec["max_len_train"] = res.Seconds, res.Test.SequenceAccuracy, res.Train.MaxLen
	if res.Probe != nil {
		rec["probe"] = res.Probe
	}
	d.Config().Training = rec
	if err := model.Save(run.Out, d); err != nil {
		return res, err
	}
	return res, os.RemoveAll(opt.CheckpointDir)
}

// captionerRecord is a captioner's training record: its settings, and
// run.Record's entries (the command that reproduces it, from the command
// line it was given: train.RebuildCommand).
func captionerRecord(run CaptionerRun) map[string]any {
	opt := run.Options
	rec := map[string]any{
		"seed": opt.Seed, "epochs": opt.Epochs, "batch_size": opt.BatchSize,
		"lr": opt.LR, "final_lr": opt.FinalLR, "optimizer": "adamw", "weight_decay": opt.WeightDecay,
		"dropout": opt.Dropout, "clip_norm": opt.ClipNorm, "shards": opt.Shards,
	}
	for k, v := range run.Record {
		rec[k] = v
	}
	if run.Init != "" {
		rec["init"] = run.Init
	}
	if opt.Stability > 0 {
		rec["stability"], rec["stability_eps"], rec["stability_ramp"] = opt.Stability, opt.StabilityEps, opt.StabilityRamp
	}
	if opt.IBP > 0 {
		rec["ibp"], rec["ibp_eps"], rec["ibp_ramp"] = opt.IBP, opt.IBPEps, opt.IBPRamp
		if b := opt.bound(); b != model.BoundInterval {
			rec["ibp_bound"] = b
		}
		if opt.IBPAttack {
			rec["ibp_attack"] = true
		}
		if opt.SABR > 0 {
			rec["ibp_sabr"] = opt.SABR
		}
	}
	if opt.distilling() {
		rec["distill_from"], rec["distill"], rec["distill_temp"], rec["teacher_sha256"] = run.DistillFrom, opt.Distill, opt.DistillTemp, opt.TeacherID
		if opt.DistillHardEOS {
			rec["distill_hard_eos"] = true
		}
	}
	return rec
}
