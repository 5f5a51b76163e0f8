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
