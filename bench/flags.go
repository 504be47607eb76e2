package bench

import "github.com/spf13/pflag"

// RegisterFlags adds the measurement's settings to fs as lenspec bench's
// flags, each starting at o's value (DefaultOptions for the CLI's).
func (o *Options) RegisterFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.Reps, "reps", o.Reps, "repetitions per measurement (median reported)")
	fs.IntVar(&o.DecodeN, "decode", o.DecodeN, "inputs per decode measurement")
	fs.IntVar(&o.TrainBatch, "batch", o.TrainBatch, "training batch size")
	fs.IntVar(&o.GradSteps, "grad-steps", o.GradSteps, "decoder steps in the input-gradient measurement")
	fs.IntVar(&o.DecodeSteps, "max-steps", o.DecodeSteps, "decoding step cap")
	fs.IntVar(&o.GEMMSize, "gemm", o.GEMMSize, "size of the square reference GEMM")
	fs.IntVar(&o.PGDBatch, "pgd-batch", o.PGDBatch, "inputs per batched PGD iteration")
}

// RegisterFlags adds the peer comparison's settings to fs as lenspec
// bench's flags, each starting at p's value (DefaultPeerOptions for the
// CLI's); --peer, the script, turns the comparison on.
func (p *PeerOptions) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&p.Script, "peer", p.Script, "compare with the PyTorch peer script (bench/peer.py) instead")
	fs.StringVar(&p.Python, "python", p.Python, "Python interpreter for --peer (with python3-torch)")
	fs.IntVar(&p.Rounds, "rounds", p.Rounds, "the most interleaved rounds per operation for --peer")
	fs.IntVar(&p.MinRounds, "min-rounds", p.MinRounds, "the fewest interleaved rounds per operation for --peer")
	fs.Float64Var(&p.Tolerance, "tolerance", p.Tolerance,
		"--peer: stop an operation's rounds once its ratio's 90% interval is within this fraction of it (0: run --rounds)")
	fs.DurationVar(&p.Budget, "budget", p.Budget, "--peer: no round past this much of an operation's rounds, once --min-rounds ran (0: no limit)")
	fs.DurationVar(&p.RoundTime, "round-time", p.RoundTime, "--peer: each side's timed runs per round add up to about this")
}
