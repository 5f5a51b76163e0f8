package search

// WithStrategy forces the strategy for facets ("walk", "complement",
// "cross", "cube") and pages ("walk", "gather"); "" lets the index
// choose.
func WithStrategy(facets, page string) Option {
	return func(o *options) { o.facets, o.page = facets, page }
}

// WithMatch forces how a query is matched ("bitmaps", "dense", "roaring";
// options.match); "" lets the index choose.
func WithMatch(match string) Option {
	return func(o *options) { o.match = match }
}

// WithCarSetBounds sets the sizes at which a garage's or a name's set of
// cars becomes a bitmap and an array again (carset.go).
func WithCarSetBounds(big, small int) Option {
	return func(o *options) { o.setBig, o.setSmall = big, small }
}

// SetStrategy replaces the strategies an index is forced to use with
// those of opts (WithStrategy, WithMatch; none lets it choose), under its
// write lock, so a test can change them between queries.
func (ix *Index) SetStrategy(opts ...Option) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.opts.facets, ix.opts.page, ix.opts.match = "", "", ""
	for _, o := range opts {
		o(&ix.opts)
	}
	if ix.d != nil {
		ix.d.opts = ix.opts
	}
}
