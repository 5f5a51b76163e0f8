package search

// column holds one field's value id per car position, as narrow as its
// greatest id allows: one byte per car while the field has at most 256
// distinct values, two up to 65,536, four beyond. Facets walk the
// matching cars reading the columns of the fields asked for, so a narrow
// column reads a quarter of the memory (a walk over half a million cars
// reads each column from end to end).
type column struct {
	w8  []uint8
	w16 []uint16
	w32 []uint32
}

// grow appends a car whose id is 0.
func (c *column) grow() {
	switch {
	case c.w32 != nil:
		c.w32 = append(c.w32, 0)
	case c.w16 != nil:
		c.w16 = append(c.w16, 0)
	default:
		c.w8 = append(c.w8, 0)
	}
}

// set stores id at position p, widening the column when id needs it.
func (c *column) set(p, id uint32) {
	if c.w32 == nil && c.w16 == nil && id > 0xff {
		c.w16 = make([]uint16, len(c.w8), max(cap(c.w8), 1))
		for i, v := range c.w8 {
			c.w16[i] = uint16(v)
		}
		c.w8 = nil
	}
	if c.w32 == nil && id > 0xffff {
		c.w32 = make([]uint32, len(c.w16), max(cap(c.w16), 1))
		for i, v := range c.w16 {
			c.w32[i] = uint32(v)
		}
		c.w16 = nil
	}
	switch {
	case c.w32 != nil:
		c.w32[p] = id
	case c.w16 != nil:
		c.w16[p] = uint16(id)
	default:
		c.w8[p] = uint8(id)
	}
}

// get returns the id at position p.
func (c *column) get(p uint32) uint32 {
	switch {
	case c.w32 != nil:
		return c.w32[p]
	case c.w16 != nil:
		return uint32(c.w16[p])
	}
	return uint32(c.w8[p])
}

// count adds one to counts[id] for the id of each position in ps.
func (c *column) count(ps []uint32, counts []uint64) {
	switch {
	case c.w32 != nil:
		col := c.w32
		for _, p := range ps {
			counts[col[p]]++
		}
	case c.w16 != nil:
		col := c.w16
		for _, p := range ps {
			counts[col[p]]++
		}
	default:
		col := c.w8
		for _, p := range ps {
			counts[col[p]]++
		}
	}
}

// valueColumn is a column with the values its ids stand for: col holds
// each position's id, ids maps a value to its id and vals an id to its
// value. Ids are given in the order values first come and never taken
// back, so they stay few and small (a column of a field of up to 256
// values is a byte per car).
type valueColumn[V comparable] struct {
	col  column
	ids  map[V]uint32
	vals []V
}

// idOf returns the id of v, giving v the next one when the column does
// not have it yet.
func (c *valueColumn[V]) idOf(v V) uint32 {
	if id, ok := c.ids[v]; ok {
		return id
	}
	if c.ids == nil {
		c.ids = map[V]uint32{}
	}
	id := uint32(len(c.vals))
	c.vals = append(c.vals, v)
	c.ids[v] = id
	return id
}

// at returns the value of position p.
func (c *valueColumn[V]) at(p uint32) V { return c.vals[c.col.get(p)] }
