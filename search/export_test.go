package search

// SetStrategy replaces the strategies an index is forced to use with
// those of opts (WithStrategy, WithMatch; none lets it choose), under its
// write lock, so a test can change them between queries. Tests only.
func (ix *Index) SetStrategy(opts ...Option) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.force = strategy{}
	for _, o := range opts {
		o(&ix.force)
	}
	if ix.d != nil {
		ix.d.force = ix.force
	}
}

// SetCarSetBounds sets the sizes at which a garage's or a name's set of
// cars becomes a bitmap and an array again (carset.go), for the rest of
// the test. Not with t.Parallel: the bounds are the package's.
func SetCarSetBounds(t interface{ Cleanup(func()) }, big, small int) {
	oldBig, oldSmall := carSetBig, carSetSmall
	carSetBig, carSetSmall = big, small
	t.Cleanup(func() { carSetBig, carSetSmall = oldBig, oldSmall })
}
