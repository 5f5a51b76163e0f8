package yard

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Car query field paths (docs/cars.md). "vendor" is another name for "make"
// and "garage" another name for "garage.id"; the parser reads them as those.
const (
	FieldColor       = "color"
	FieldType        = "type"
	FieldDoors       = "doors"
	FieldMake        = "make"
	FieldModel       = "model"
	FieldYear        = "year"
	FieldGarageID    = "garage.id"
	FieldGarageName  = "garage.name"
	FieldGarageState = "garage.state"
)

// Query operators of the q.<path>.<op> form.
const (
	OpEq = "eq"
	OpNe = "ne"
	OpLt = "lt"
	OpLe = "le"
	OpGt = "gt"
	OpGe = "ge"
)

// FieldKind says how the values of a field are compared.
type FieldKind int

// Field kinds.
const (
	KindText   FieldKind = iota // case-insensitive text
	KindNumber                  // whole number; eq, ne, lt, le, gt, ge
	KindID                      // an exact identifier
)

// fieldInfo describes one queryable field.
type fieldInfo struct {
	kind     FieldKind
	nullable bool // the value "null" means "the car is in no garage"
}

// queryFields is the whitelist of query paths, aliases resolved.
var queryFields = map[string]fieldInfo{
	FieldColor:       {kind: KindText},
	FieldType:        {kind: KindText},
	FieldDoors:       {kind: KindNumber},
	FieldMake:        {kind: KindText},
	FieldModel:       {kind: KindText},
	FieldYear:        {kind: KindNumber},
	FieldGarageID:    {kind: KindID, nullable: true},
	FieldGarageName:  {kind: KindText, nullable: true},
	FieldGarageState: {kind: KindText, nullable: true},
}

// fieldAliases maps other accepted names to their path.
var fieldAliases = map[string]string{
	"vendor": FieldMake,
	"garage": FieldGarageID,
}

// QueryFields lists the canonical query paths in order.
func QueryFields() []string {
	return slices.Sorted(maps.Keys(queryFields))
}

// FieldKindOf returns the kind of a canonical path, and false when the
// path is not queryable.
func FieldKindOf(path string) (FieldKind, bool) {
	fi, ok := queryFields[path]
	return fi.kind, ok
}

// CanonicalField resolves a field name of the grammar (any case, aliases
// such as vendor for make allowed) to its canonical path, and false when
// no queryable path has that name.
func CanonicalField(name string) (string, bool) {
	path, _, ok := canonicalField(name)
	return path, ok
}

// canonicalField resolves a field name (any case, aliases allowed) to its
// canonical path.
func canonicalField(name string) (string, fieldInfo, bool) {
	name = strings.ToLower(name)
	if a, ok := fieldAliases[name]; ok {
		name = a
	}
	fi, ok := queryFields[name]
	return name, fi, ok
}

// Limits that keep one query small.
const (
	MaxQueryValues = 200 // values over all fields
	MaxValueLength = 256
)

// Range is one numeric bound of a filter.
type Range struct {
	Op    string // lt, le, gt or ge
	Value int64
}

// Filter is the condition on one field: the car's value is one of In (or
// the car is in no garage, when Null), none of NotIn (and the car is in a
// garage, when NotNull), and within every Range.
//
// Text values are lower-case (string matches ignore case), numbers are in
// decimal without leading zeros, and every list is sorted and free of
// duplicates, so equivalent queries are equal values.
type Filter struct {
	Field   string
	In      []string
	Null    bool
	NotIn   []string
	NotNull bool
	Ranges  []Range
}

// Query is a car search: filters that all hold (AND). Every car-list URL
// shape, both search body shapes and stored searches become a Query, and
// one compiler in the store turns it into SQL.
type Query struct {
	Filters []Filter // sorted by Field; a field appears at most once per parsed query
}

// IsZero reports whether q matches every car.
func (q Query) IsZero() bool { return len(q.Filters) == 0 }

// Equal reports whether q and o are the same query.
func (q Query) Equal(o Query) bool { return q.String() == o.String() }

// And returns a query whose results are those matching both q and o. A
// field filtered by both keeps both conditions.
func (q Query) And(o Query) Query {
	out := Query{Filters: append(slices.Clone(q.Filters), o.Filters...)}
	slices.SortStableFunc(out.Filters, func(a, b Filter) int { return strings.Compare(a.Field, b.Field) })
	return out
}

// String renders q in the query grammar, canonically: fields in order,
// values sorted, pairs joined by '&'. ParseCarQuery(q.String()) gives q
// back.
func (q Query) String() string {
	var pairs []string
	for _, f := range q.Filters {
		pairs = append(pairs, f.pairs()...)
	}
	return strings.Join(pairs, "&")
}

func (f Filter) pairs() []string {
	var out, vals []string
	for _, v := range f.In {
		vals = append(vals, escapeValue(v))
	}
	if f.Null {
		vals = append(vals, "null")
	}
	for _, v := range f.NotIn {
		vals = append(vals, "!"+escapeValue(v))
	}
	if f.NotNull {
		vals = append(vals, "!null")
	}
	if len(vals) > 0 {
		out = append(out, f.Field+"="+strings.Join(vals, ","))
	}
	for _, r := range f.Ranges {
		out = append(out, "q."+f.Field+"."+r.Op+"="+strconv.FormatInt(r.Value, 10))
	}
	return out
}

// escapeValue percent-encodes every byte but the unreserved characters
// of RFC 3986 (ALPHA, DIGIT, "-", ".", "_", "~"): what the grammar gives a
// meaning to, and a space as %20, not '+'.
func escapeValue(v string) string {
	return strings.ReplaceAll(url.QueryEscape(v), "+", "%20")
}

// queryBuilder gathers conditions into a Query, one filter per field. A
// query holds a few fields and values (MaxQueryValues at most), so they
// are kept in slices, sorted and deduplicated once in query: maps made for
// every parsed query were most of its parse, the busiest route's
// (docs/benchmark-journal.md, "Fewer allocations for a car list").
type queryBuilder struct {
	// The sets, one per field, in the order first met: the first four in
	// first (the common case, without an allocation of their own), all of
	// them in more past four. No pointer into the builder is kept in it,
	// so that a builder stays on its caller's stack.
	first  [4]filterSet
	n      int
	more   []filterSet
	values int
}

// sets returns the sets so far.
func (b *queryBuilder) sets() []filterSet {
	if b.more != nil {
		return b.more
	}
	return b.first[:b.n]
}

type filterSet struct {
	field         string
	in, notIn     []string
	null, notNull bool
	ranges        [len(rangeOps)]bound // the strongest bound per operator
}

// rangeOps are the comparison operators, in the order of a Filter's Ranges.
var rangeOps = [...]string{OpGe, OpGt, OpLe, OpLt}

type bound struct {
	set bool
	n   int64
}

// set returns the conditions of field, made on first use.
// The set is the builder's until the next call: do not keep it.
func (b *queryBuilder) set(field string) *filterSet {
	sets := b.sets()
	for i := range sets {
		if sets[i].field == field {
			return &sets[i]
		}
	}
	if b.more == nil && b.n < len(b.first) {
		b.first[b.n] = filterSet{field: field}
		b.n++
		return &b.first[b.n-1]
	}
	if b.more == nil {
		b.more = append(make([]filterSet, 0, 2*len(b.first)), b.first[:]...)
	}
	b.more = append(b.more, filterSet{field: field})
	return &b.more[len(b.more)-1]
}

// add records one condition: field (canonical), operator (one of the six;
// filterKey and the search body's keys read no other), value (already
// decoded) and whether the value was negated with '!'. It returns a
// message saying why the condition is refused, or "".
func (b *queryBuilder) add(field string, fi fieldInfo, op, value string, negated bool) string {
	b.values++
	if b.values > MaxQueryValues {
		return fmt.Sprintf("a query holds at most %d values", MaxQueryValues)
	}
	if value == "" {
		return "empty value"
	}
	if !utf8.ValidString(value) {
		return "the value is not UTF-8 text"
	}
	fs := b.set(field)
	if op == OpEq || op == OpNe {
		exclude := (op == OpNe) != negated
		if value == "null" && fi.nullable {
			if exclude {
				fs.notNull = true
			} else {
				fs.null = true
			}
			return ""
		}
		v, msg := normalizeValue(fi.kind, value)
		if msg != "" {
			return msg
		}
		if len(v) > MaxValueLength {
			return fmt.Sprintf("a value is at most %d bytes", MaxValueLength)
		}
		if exclude {
			fs.notIn = append(fs.notIn, v)
		} else {
			fs.in = append(fs.in, v)
		}
		return ""
	}
	// lt, le, gt or ge.
	if fi.kind != KindNumber {
		return fmt.Sprintf("operator %s applies to numbers only (doors, year)", op)
	}
	if negated {
		return "a '!' value cannot be used with " + op
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return fmt.Sprintf("%q is not a whole number", value)
	}
	r := &fs.ranges[slices.Index(rangeOps[:], op)]
	switch {
	case !r.set:
		*r = bound{set: true, n: n}
	case (op == OpLt || op == OpLe) && n < r.n, (op == OpGt || op == OpGe) && n > r.n:
		r.n = n
	}
	return ""
}

// normalizeValue returns the canonical form of a value of a field kind.
func normalizeValue(kind FieldKind, v string) (string, string) {
	switch kind {
	case KindNumber:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", fmt.Sprintf("%q is not a whole number", v)
		}
		return strconv.FormatInt(n, 10), ""
	case KindText:
		return strings.ToLower(v), ""
	}
	return v, ""
}

func (b *queryBuilder) query() Query {
	var q Query
	sets := b.sets()
	if len(sets) > 0 {
		q.Filters = make([]Filter, 0, len(sets))
	}
	for i := range sets {
		fs := &sets[i]
		f := Filter{Field: fs.field, Null: fs.null, NotNull: fs.notNull, In: sortedSet(fs.in), NotIn: sortedSet(fs.notIn)}
		for i, r := range fs.ranges {
			if r.set {
				f.Ranges = append(f.Ranges, Range{Op: rangeOps[i], Value: r.n})
			}
		}
		q.Filters = append(q.Filters, f)
	}
	slices.SortFunc(q.Filters, func(a, b Filter) int { return strings.Compare(a.Field, b.Field) })
	return q
}

// sortedSet returns the values sorted, each once (nil for none).
func sortedSet(vs []string) []string {
	if len(vs) == 0 {
		return nil
	}
	slices.Sort(vs)
	return slices.Compact(vs)
}

// ParseCarQuery parses a raw (still percent-encoded) query string in the
// car query grammar of docs/cars.md into a Query and a page:
//
//   - pairs are read by ReadQuery, the reader of every list's query
//     (separated by '&' or ';'; offset and max page by its rule);
//   - field=a,b means a OR b; the split is on literal commas before
//     percent-decoding, so %2C is a comma inside a value;
//   - a value with a leading literal '!' is excluded;
//   - repeating a field adds values; different fields AND together;
//   - q.<path>.<op>=v with op eq or ne, and lt, le, gt, ge on numbers;
//   - paths: color, type, doors, make (alias vendor), model, year,
//     garage.id (alias garage), garage.name, garage.state; on the garage
//     paths the value null means "in no garage"; paths ignore case.
//
// Errors are ParamError: EINVALID, naming the offending parameter.
func ParseCarQuery(raw string) (Query, Page, error) {
	return parseCarQuery(raw, nil)
}

// ParseCarListQuery is ParseCarQuery for a car list, which also takes
// facets=FIELD[,FIELD...] (fields of the grammar, aliases allowed,
// repeatable). It returns the facet fields as named, in lower case, in
// the order first named, without repeats (FacetPaths gives the paths
// they count); an unknown one is EINVALID naming "facets".
func ParseCarListQuery(raw string) (Query, Page, []string, error) {
	var facets []string
	q, page, err := parseCarQuery(raw, &facets)
	return q, page, facets, err
}

// FacetPaths are the paths of the facet field names, once each, in the
// order first named: what CarLister.ListCars counts.
func FacetPaths(names []string) []string {
	paths := make([]string, 0, len(names))
	for _, name := range names {
		if p, _ := CanonicalField(name); !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths
}

// parseCarQuery parses the grammar; facets, when not nil, receives the
// fields of facets pairs (which are otherwise an unknown parameter). The
// pairs and the paging are read by ReadQuery, the reader of every list.
func parseCarQuery(raw string, facets *[]string) (Query, Page, error) {
	var b queryBuilder
	page, err := ReadQuery(raw, Paging{}, func(key, rawValue string) string {
		if key == "facets" && facets != nil {
			for item := range strings.SplitSeq(rawValue, ",") {
				name, err := url.QueryUnescape(item)
				if err != nil {
					return BadValueEscape
				}
				if _, _, ok := canonicalField(name); !ok {
					return fmt.Sprintf("unknown facet field %q (use %s, vendor or garage)", name, strings.Join(QueryFields(), ", "))
				}
				if name = strings.ToLower(name); !slices.Contains(*facets, name) {
					*facets = append(*facets, name)
				}
			}
			return ""
		}
		field, op, msg := filterKey(key, "path", OpEq, OpNe, OpLt, OpLe, OpGt, OpGe)
		if msg != "" {
			return msg
		}
		path, fi, ok := canonicalField(field)
		if !ok {
			return UnknownParam
		}
		if op != OpEq && op != OpNe && strings.Contains(rawValue, ",") {
			return "operator " + op + " takes one value"
		}
		for item := range strings.SplitSeq(rawValue, ",") {
			item, negated := strings.CutPrefix(item, "!")
			v, err := url.QueryUnescape(item)
			if err != nil {
				return BadValueEscape
			}
			if msg := b.add(path, fi, op, v, negated); msg != "" {
				return msg
			}
		}
		return ""
	})
	if err != nil {
		return Query{}, Page{}, err
	}
	return b.query(), page, nil
}

// filterKey reads the name of a filter parameter: a bare field (operator
// eq), or q.<what>.<op> with op one of ops (any case). msg says what is
// wrong with it, "" when nothing is.
func filterKey(key, what string, ops ...string) (field, op, msg string) {
	if !strings.HasPrefix(strings.ToLower(key), "q.") {
		return key, OpEq, ""
	}
	i := strings.LastIndexByte(key, '.')
	if i <= 1 {
		return "", "", "the filter form is q.<" + what + ">.<op>"
	}
	op = strings.ToLower(key[i+1:])
	if !slices.Contains(ops, op) {
		use := strings.Join(ops[:len(ops)-1], ", ") + " or " + ops[len(ops)-1]
		return "", "", fmt.Sprintf("unknown operator %q (use %s)", key[i+1:], use)
	}
	return key[2:i], op, ""
}
