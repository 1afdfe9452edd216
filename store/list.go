package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentd/agentd/domain"
)

// sortColumns maps sort fields to columns; each is the second column of an
// (account_id, column, id) index, so a page is an index range scan.
var sortColumns = map[domain.SortField]string{
	domain.SortCreatedAt: "created_at",
	domain.SortName:      "name",
	domain.SortStatus:    "status",
}

// summaryColumns are the columns of a summary, in the order a page query
// gives them (see summaryRow).
var summaryColumns = []string{"id", "name", "model_provider", "model", "status", "clients", "created_at", "updated_at"}

// ListAgents returns one page of the agents of account accountID, as
// summaries, and the number of agents matching q.Status. Ties in the sort
// column are broken by id in the same direction. A page past the end is
// empty, not an error. An unknown SortBy is ErrInvalid.
//
// It is a hot read, made without GORM: a page and its count are one
// prepared statement. An empty page is counted apart: a page past the end
// is read first, which walks the sort index up to the account's last
// agent, as the last page does.
func (s Agents) ListAgents(ctx context.Context, accountID string, q domain.ListQuery) ([]domain.AgentSummary, int64, error) {
	q = normalizeListQuery(q)
	col, ok := sortColumns[q.SortBy]
	if !ok {
		return nil, 0, wrap("list agents", invalidf("unknown sort field %q", q.SortBy))
	}
	agents, total, err := s.listAgents(s.readContext(ctx), col, accountID, q)
	if err != nil {
		return nil, 0, wrap("list agents", err)
	}
	for i := range agents {
		agents[i].CreatedAt = agents[i].CreatedAt.UTC()
	}
	return agents, total, nil
}

// listAgents reads the page q, ordered by col, and the count of q.Status.
// The default listing (every status, by createdAt) starts from the page's
// first agent when pageStarts knows it under the version of the account's
// set of agents the page is read under, and reads one agent more to leave
// the next page's start there. The summaries' CreatedAt are as read.
func (s *core) listAgents(ctx context.Context, col, accountID string, q domain.ListQuery) ([]domain.AgentSummary, int64, error) {
	offset, inRange := pageOffset(q.Page, q.Limit)
	if !inRange {
		total, err := s.countListed(ctx, accountID, q)
		return []domain.AgentSummary{}, total, err
	}
	key := pageKey{accountID, q.Desc, offset}
	var start *pageStart
	if defaultListing(q) && offset > 0 {
		if st, ok := s.starts.lookup(key); ok {
			start = &st
		}
	}
	p, err := s.readPage(ctx, col, accountID, q, offset, start)
	if err == nil && start != nil && (len(p.agents) == 0 || p.setVersion != start.setVersion) {
		// A start read under another version of the set of agents may not
		// be where the page starts now (and an empty page says no version).
		start = nil
		p, err = s.readPage(ctx, col, accountID, q, offset, nil)
	}
	if err != nil {
		return nil, 0, err
	}
	if len(p.agents) == 0 {
		total, err := s.countListed(ctx, accountID, q)
		return []domain.AgentSummary{}, total, err
	}
	return s.keepStarts(p, key, q, start == nil), p.total, nil
}

// pageOffset is the offset of page, false when it is past any number of
// agents (it overflows).
func pageOffset(page, limit int) (int, bool) {
	if page-1 > math.MaxInt/limit {
		return 0, false
	}
	return (page - 1) * limit, true
}

// defaultListing reports whether q lists every status by createdAt, the
// listing whose page starts are kept.
func defaultListing(q domain.ListQuery) bool {
	return q.Status == "" && q.SortBy == domain.SortCreatedAt
}

// keepStarts keeps, for the default listing, where the page at
// key starts, when it was read from an offset, and where the next one
// does, from the page's extra agent, and returns the page without it.
func (s *core) keepStarts(p listPage, key pageKey, q domain.ListQuery, fromOffset bool) []domain.AgentSummary {
	if !defaultListing(q) {
		return p.agents
	}
	if fromOffset && key.offset > 0 {
		s.starts.put(key, startAt(p.setVersion, p.agents[0]))
	}
	if len(p.agents) > q.Limit {
		s.starts.put(pageKey{key.account, key.desc, key.offset + q.Limit}, startAt(p.setVersion, p.agents[q.Limit]))
		return p.agents[:q.Limit]
	}
	return p.agents
}

// listPage is what a page query read: the summaries, and the count and
// the version of the set of agents it read them under (0 when filtered by
// status), unknown when there are no summaries.
type listPage struct {
	agents            []domain.AgentSummary
	total, setVersion int64
}

// readPage reads the page of q at offset, or from start when it is not nil
// (the default listing only), one agent more for the default listing.
func (s *core) readPage(ctx context.Context, col, accountID string, q domain.ListQuery, offset int, start *pageStart) (listPage, error) {
	sh := listShape{col: col, desc: q.Desc, status: q.Status != "", from: start != nil}
	args := make([]any, 1, 5)
	args[0] = accountID
	if sh.status {
		args = append(args, string(q.Status))
	}
	if start != nil {
		args = append(args, start.createdAt, start.id)
	}
	limit := q.Limit
	if defaultListing(q) {
		limit++
	}
	args = append(args, limit)
	if start == nil {
		args = append(args, offset)
	}
	end := s.statementSpan(ctx, "SELECT", "agents")
	p, err := s.scanPage(ctx, listQueries[b2i(s.postgres)][sh], limit, args)
	end(err)
	return p, err
}

func (s *core) scanPage(ctx context.Context, query string, limit int, args []any) (listPage, error) {
	rows, err := s.readRows(ctx, query, args...)
	if err != nil {
		return listPage{}, err
	}
	defer rows.Close()
	p := listPage{agents: make([]domain.AgentSummary, 0, limit)}
	var r summaryRow
	dest := r.dest(s.postgres)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return listPage{}, err
		}
		if !s.postgres {
			if err := r.unpack(); err != nil {
				return listPage{}, err
			}
		}
		p.agents = append(p.agents, r.summary())
		p.total, p.setVersion = r.total, r.setVersion
	}
	return p, rows.Err()
}

// listShape is what the text of a page query depends on.
type listShape struct {
	col    string // the sort column
	desc   bool
	status bool // filtered by status
	from   bool // from a known page start, instead of an offset
}

// listQueries holds the text of every page query, for SQLite ([0]) and
// PostgreSQL ([1]), written once.
var listQueries = [2]map[listShape]string{listQueriesFor(false), listQueriesFor(true)}

func listQueriesFor(postgres bool) map[listShape]string {
	out := map[listShape]string{}
	for _, col := range sortColumns {
		for _, desc := range []bool{false, true} {
			for _, status := range []bool{false, true} {
				for _, from := range []bool{false, true} {
					sh := listShape{col, desc, status, from}
					out[sh] = listQuery(postgres, sh)
				}
			}
		}
	}
	return out
}

// listQuery writes the page query of shape sh. Its arguments are the
// account, then the status (when filtered), then the start's created_at
// and id (from a start), then the limit, then the offset (from an
// offset). Each row is a summary (summaryColumns) and the count of the
// agents listed and the version of the account's set of agents (0 when
// filtered by status), from scalar subqueries, which both databases run
// once a statement (an agent's account always exists).
//
// On SQLite a row is one text value rather than ten columns: the count
// and the version, each followed by a colon, then packSQL's text of the
// summary. The driver makes three calls into C and two allocations for
// every text column of every row, and reading them was most of a page's
// time; the database writes the value, and the scan splits it without
// copying. It also gives the stored text of the timestamps, which the
// driver would parse for their declared type (see storedTime).
func listQuery(postgres bool, sh listShape) string {
	n := 1
	arg := func() string {
		n++
		return "$" + strconv.Itoa(n)
	}
	dir, from := " ASC", " >= "
	if sh.desc {
		dir, from = " DESC", " <= "
	}
	where := "account_id = $1"
	// The count and the version: two columns on PostgreSQL, a text
	// "count:version:" on SQLite.
	counts := [2]string{"(SELECT agent_count FROM accounts WHERE id = $1)", "(SELECT agent_set_version FROM accounts WHERE id = $1)"}
	packedCounts := "(SELECT agent_count || ':' || agent_set_version || ':' FROM accounts WHERE id = $1)"
	if sh.status {
		where += " AND status = " + arg()
		counts = [2]string{"(SELECT count(*) FROM agents WHERE " + where + ")", "0"}
		packedCounts = "(SELECT count(*) || ':0:' FROM agents WHERE " + where + ")"
	}
	if sh.from {
		where += " AND (created_at, id)" + from + "(" + arg() + ", " + arg() + ")"
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	if postgres {
		b.WriteString(strings.Join(summaryColumns, ", ") + ", " + counts[0] + ", " + counts[1])
	} else {
		b.WriteString(packedCounts + " || " + packSQL(summaryColumns))
	}
	b.WriteString(" FROM agents WHERE " + where + " ORDER BY " + sh.col + dir + ", id" + dir + " LIMIT " + arg())
	if !sh.from {
		b.WriteString(" OFFSET " + arg())
	}
	return b.String()
}

// packSQL is a SQLite expression of the values of exprs as one text: each
// as its length in bytes, a colon and its text ("5:agent"), one after the
// other (see unpackText). Every expression must be NOT NULL.
func packSQL(exprs []string) string {
	parts := make([]string, len(exprs))
	for i, e := range exprs {
		parts[i] = "length(CAST(" + e + " AS BLOB)) || ':' || " + e
	}
	return strings.Join(parts, " || ")
}

// summaryRow is a row of a page query (see listQuery), scanned in place:
// on SQLite packed, then unpacked into the columns' fields.
type summaryRow struct {
	packed                                     string
	id, name, provider, model, status, clients string
	createdAt, updatedAt                       storedTime
	total, setVersion                          int64
}

// dest is where Scan writes a row.
func (r *summaryRow) dest(postgres bool) []any {
	if !postgres {
		return []any{&r.packed}
	}
	return []any{&r.id, &r.name, &r.provider, &r.model, &r.status, &r.clients, &r.createdAt, &r.updatedAt, &r.total, &r.setVersion}
}

// unpack splits the packed row into the fields.
func (r *summaryRow) unpack() error {
	var v [8]string
	total, rest, ok1 := strings.Cut(r.packed, ":")
	setVersion, rest, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || !unpackText(rest, v[:]) {
		return fmt.Errorf("a packed summary does not parse: %q", r.packed)
	}
	var err1, err2 error
	r.total, err1 = strconv.ParseInt(total, 10, 64)
	r.setVersion, err2 = strconv.ParseInt(setVersion, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	r.id, r.name, r.provider, r.model, r.status, r.clients = v[0], v[1], v[2], v[3], v[4], v[5]
	r.createdAt = storedTime{parseStoredTime(v[6]), true}
	r.updatedAt = storedTime{parseStoredTime(v[7]), true}
	return nil
}

// unpackText splits packed, packSQL's text of len(out) values, into out,
// each a substring of packed. It reports false unless packed is exactly
// that.
func unpackText(packed string, out []string) bool {
	for i := range out {
		colon := strings.IndexByte(packed, ':')
		if colon < 1 || colon > 10 {
			return false
		}
		n, ok := digits(packed[:colon])
		if !ok || n > len(packed)-colon-1 {
			return false
		}
		out[i], packed = packed[colon+1:colon+1+n], packed[colon+1+n:]
	}
	return packed == ""
}

// summary is the summary of the row, its CreatedAt as read.
func (r *summaryRow) summary() domain.AgentSummary {
	a := domain.AgentSummary{
		ID: r.id, Name: r.name, ModelProvider: r.provider, Model: r.model, Status: domain.Status(r.status),
		CreatedAt: r.createdAt.Time, UpdatedAt: r.updatedAt.Time.UTC(),
	}
	if r.clients != "" {
		a.Clients = json.RawMessage(r.clients)
	}
	return a
}

// The count queries of countListed.
const (
	accountAgentsQuery = `SELECT agent_count FROM accounts WHERE id = $1`
	countStatusQuery   = `SELECT count(*) FROM agents WHERE account_id = $1 AND status = $2`
)

// countListed returns how many agents match q: the account's agent
// counter when every status is listed (one primary-key read), else a count
// over the (account_id, status) index. The page queries count the same.
func (s *core) countListed(ctx context.Context, accountID string, q domain.ListQuery) (total int64, err error) {
	if q.Status != "" {
		end := s.statementSpan(ctx, "SELECT", "agents")
		err = s.readRow(ctx, countStatusQuery, accountID, string(q.Status)).Scan(&total)
		end(err)
		return total, err
	}
	end := s.statementSpan(ctx, "SELECT", "accounts")
	err = s.readRow(ctx, accountAgentsQuery, accountID).Scan(&total)
	end(err)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil // an unknown account has no agents, as the count said
	}
	return total, err
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// normalizeListQuery applies the defaults of ListQuery.
func normalizeListQuery(q domain.ListQuery) domain.ListQuery {
	if q.Page < 1 {
		q.Page = 1
	}
	if q.Limit < 1 {
		q.Limit = domain.DefaultPageLimit
	}
	if q.SortBy == "" {
		q.SortBy = domain.SortCreatedAt
	}
	return q
}
