package store

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/yard-api/yard"
)

// carColumn maps a query path to the column it compares. Only these
// names ever reach SQL text: values always travel as arguments.
var carColumn = map[string]string{
	yard.FieldColor:       "color_key",
	yard.FieldType:        "type_key",
	yard.FieldDoors:       "doors",
	yard.FieldMake:        "make_key",
	yard.FieldModel:       "model_key",
	yard.FieldYear:        "year",
	yard.FieldGarageID:    "garage_id",
	yard.FieldGarageState: "garage_state_key",
	// garage.name goes through a subquery on garages, see compileFilter.
}

var rangeSQL = map[string]string{yard.OpLt: "<", yard.OpLe: "<=", yard.OpGt: ">", yard.OpGe: ">="}

// CompileCarQuery turns q into a WHERE condition on the cars table (no
// "WHERE" keyword; "1=1" for the empty query) and its arguments. Every
// value becomes a $N placeholder, numbered from len(args)+1 so callers can
// put their own arguments first; the SQL text holds nothing but the
// whitelisted column names, keywords and placeholders. The same text runs
// on SQLite (modernc binds $N by number) and PostgreSQL.
func CompileCarQuery(q yard.Query, args []any) (string, []any) {
	c := sqlArgs{args: args}
	var conds []string
	for _, f := range q.Filters {
		conds = append(conds, c.filter(f)...)
	}
	return cmp.Or(strings.Join(conds, " AND "), "1=1"), c.args
}

// sqlArgs collects the arguments of a statement, each with its $N
// placeholder (a car query's, an order list's).
type sqlArgs struct {
	args []any
}

// arg appends v and returns its placeholder.
func (c *sqlArgs) arg(v any) string {
	c.args = append(c.args, v)
	return "$" + strconv.Itoa(len(c.args))
}

// list returns "$i, $j, ..." for the values, converted for the field kind.
func (c *sqlArgs) list(kind yard.FieldKind, vals []string) string {
	ph := make([]string, len(vals))
	for i, v := range vals {
		ph[i] = c.arg(convertValue(kind, v))
	}
	return strings.Join(ph, ", ")
}

func convertValue(kind yard.FieldKind, v string) any {
	if kind == yard.KindNumber {
		n, _ := strconv.ParseInt(v, 10, 64) // the parser normalised it
		return n
	}
	return v
}

// filter compiles one field's conditions into AND-ed terms.
func (c *sqlArgs) filter(f yard.Filter) []string {
	kind, ok := yard.FieldKindOf(f.Field)
	if !ok {
		// Unreachable for parsed queries; match nothing rather than guess.
		return []string{"1=0"}
	}
	col, nullable := carColumn[f.Field], strings.HasPrefix(f.Field, "garage.")
	// in(vals) is the condition "column is one of vals".
	in := func(vals []string) string { return col + " IN (" + c.list(kind, vals) + ")" }
	if f.Field == yard.FieldGarageName {
		col = "garage_id"
		in = func(vals []string) string {
			return "garage_id IN (SELECT id FROM garages WHERE name_key IN (" + c.list(kind, vals) + "))"
		}
	}
	var out []string
	switch {
	case len(f.In) > 0 && f.Null:
		out = append(out, "("+in(f.In)+" OR "+col+" IS NULL)")
	case len(f.In) > 0:
		out = append(out, in(f.In))
	case f.Null:
		out = append(out, col+" IS NULL")
	}
	if len(f.NotIn) > 0 {
		if nullable {
			// A car in no garage is not in an excluded garage: keep it.
			out = append(out, "("+col+" IS NULL OR NOT "+in(f.NotIn)+")")
		} else {
			out = append(out, "NOT "+in(f.NotIn))
		}
	}
	if f.NotNull {
		out = append(out, col+" IS NOT NULL")
	}
	for _, r := range f.Ranges {
		out = append(out, col+" "+rangeSQL[r.Op]+" "+c.arg(r.Value))
	}
	return out
}
