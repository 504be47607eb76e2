package ad

import "fmt"

// Gather returns the rows table[ids[i]] as a [len(ids), D] tensor: an
// embedding lookup. Its gradient scatter-adds into the table, so a token
// used twice in a batch receives both contributions.
func (tp *Tape[T]) Gather(table *Node[T], ids []int) *Node[T] {
	if len(table.Value.Shape) != 2 {
		panic(fmt.Sprintf("ad.Gather: table shape %v", table.Value.Shape))
	}
	v, d := table.Value.Shape[0], table.Value.Shape[1]
	out := tp.alloc(false, len(ids), d)
	for i, id := range ids {
		if id < 0 || id >= v {
			panic(fmt.Sprintf("ad.Gather: id %d outside table of %d rows", id, v))
		}
		copy(out.Data[i*d:(i+1)*d], table.Value.Data[id*d:(id+1)*d])
	}
	ids = append([]int(nil), ids...)
	return tp.op(out, func(o *Node[T]) {
		if !table.needsGrad {
			return
		}
		g := table.grad().Data
		for i, id := range ids {
			dst := g[id*d : (id+1)*d]
			for j, x := range o.Grad.Data[i*d : (i+1)*d] {
				dst[j] += x
			}
		}
	}, table)
}
