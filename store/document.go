package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/agentd/agentd/agent"
	"github.com/agentd/agentd/domain"
)

// renderVersion names the way renderDocument writes a document; bump it
// whenever that changes, so stored documents written the old way are
// rendered again (see documentRev).
const renderVersion = 1

// emptyMembers are the members every Get Agent document shows, with the
// value they take while never set.
var emptyMembers = agent.EmptyMembers()

// documentRev identifies what a stored document was rendered with: the
// render version and the empty members. A row whose document_rev differs
// was written by an older build (or before documents were stored) and its
// document is rendered again from its fields when read.
var documentRev = func() int64 {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d", renderVersion)
	for _, name := range slices.Sorted(maps.Keys(emptyMembers)) {
		fmt.Fprintf(h, "\x00%s\x00%s", name, emptyMembers[name])
	}
	return int64(h.Sum32())
}()

// membersDocument writes an agent's members as a JSON object, sorted by
// name, left open for more members: every member of fields, settings
// passed through secrets, then the empty value of each member of
// emptyMembers the agent never set. Stored members are canonical JSON, so
// they are copied, never decoded and encoded again.
func membersDocument(fields map[string]json.RawMessage, secrets func(json.RawMessage) (json.RawMessage, error)) (*bytes.Buffer, error) {
	names := make([]string, 0, len(fields)+len(emptyMembers))
	for name := range fields {
		names = append(names, name)
	}
	for name := range emptyMembers {
		if _, ok := fields[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	b := &bytes.Buffer{}
	b.Grow(512 + 64*len(names))
	b.WriteByte('{')
	for _, name := range names {
		value, ok := fields[name]
		if !ok {
			value = emptyMembers[name]
		} else if name == "settings" {
			v, err := secrets(value)
			if err != nil {
				return nil, fmt.Errorf("the secrets of stored settings: %w", err)
			}
			value = v
		}
		if err := writeMember(b, name, value); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// writeMember appends "name":value to the open object in b.
func writeMember(b *bytes.Buffer, name string, value []byte) error {
	if b.Len() > 1 {
		b.WriteByte(',')
	}
	key, err := agent.AppendCanonical(b.AvailableBuffer(), name)
	if err != nil {
		return err
	}
	b.Write(key)
	b.WriteByte(':')
	b.Write(value)
	return nil
}

// CharacterFile renders what Get Agent shows of a, every stored member and
// the empty value of those never set, without the service's own members
// (id, status, timestamps, metrics) and without any secret:
// settings.secrets and the MCP servers' headers are absent rather than
// masked, so the file can be shared and imported elsewhere. It reads
// nothing: it is a method so that the HTTP layer, which never imports
// store, reaches it through its Store interface.
func (s Agents) CharacterFile(a domain.Agent) (json.RawMessage, error) {
	b, err := membersDocument(a.Fields, StripSecrets)
	if err != nil {
		return nil, wrap("character file", err)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// renderDocument renders the Get Agent document of a but its metrics: its
// members with every secret masked (see MaskSecrets), the empty value of
// those never set, then id, status, statusReason (in error only),
// createdAt and updatedAt.
func renderDocument(a domain.Agent) (string, error) {
	b, err := membersDocument(a.Fields, MaskSecrets)
	if err != nil {
		return "", err
	}
	own := []struct{ name, value string }{
		{"id", a.ID}, {"status", string(a.Status)}, {"statusReason", a.StatusReason},
		{"createdAt", timestamp(a.CreatedAt)}, {"updatedAt", timestamp(a.UpdatedAt)},
	}
	for _, m := range own {
		if m.name == "statusReason" && (a.Status != domain.StatusError || a.StatusReason == "") {
			continue
		}
		v, err := agent.AppendCanonical(nil, m.value)
		if err != nil {
			return "", err
		}
		if err := writeMember(b, m.name, v); err != nil {
			return "", err
		}
	}
	b.WriteByte('}')
	return b.String(), nil
}

// renderRow stores on row the Get Agent document of the agent it holds,
// whose decoded fields are fields.
func renderRow(row *agentRow, fields map[string]json.RawMessage) error {
	doc, err := renderDocument(toAgentFields(*row, fields))
	if err != nil {
		return err
	}
	row.Document, row.DocumentRev = doc, documentRev
	return nil
}

// getDocumentQuery reads what GetAgentDocument answers: the stored document
// and what the metrics are counted from.
const getDocumentQuery = `SELECT document, document_rev, version, created_at, total_messages,
	total_conversations, error_since, error_millis FROM agents WHERE id = $1 AND account_id = $2`

// GetAgentDocument returns the Get Agent document of the agent id of
// account accountID, as stored by the transaction of its last change, and
// its metrics counted now. It reads one row through a prepared statement,
// without decoding the agent. A row written before documents were stored,
// or by a build that renders them otherwise, is rendered from its fields
// and its document stored, unless it changed meanwhile. An agent of
// another account is ErrNotFound, like a missing one.
func (s Agents) GetAgentDocument(ctx context.Context, accountID, id string) (domain.AgentDocument, error) {
	var (
		row  agentRow
		body string
		rev  int64
		errs sql.NullTime
	)
	end := s.statementSpan(ctx, "SELECT", "agents")
	err := s.getDoc.QueryRowContext(ctx, id, accountID).Scan(&body, &rev, &row.Version, &row.CreatedAt,
		&row.TotalMessages, &row.TotalConversations, &errs, &row.ErrorMillis)
	end(err)
	if errors.Is(err, sql.ErrNoRows) {
		return domain.AgentDocument{}, wrap("get agent", domain.ErrNotFound)
	}
	if err != nil {
		return domain.AgentDocument{}, wrap("get agent", err)
	}
	if errs.Valid {
		row.ErrorSince = &errs.Time
	}
	doc := domain.AgentDocument{Body: json.RawMessage(body), Version: row.Version, Metrics: metricsOf(row, s.now())}
	if rev == documentRev {
		return doc, nil
	}
	return s.refreshDocument(ctx, accountID, id)
}

// refreshDocument renders the document of an agent whose stored one is
// missing or out of date, and stores it unless the agent changed since it
// was read (its version moved).
func (s *core) refreshDocument(ctx context.Context, accountID, id string) (domain.AgentDocument, error) {
	a, err := Agents{s}.GetAgent(ctx, accountID, id)
	if err != nil {
		return domain.AgentDocument{}, err
	}
	body, err := renderDocument(a)
	if err != nil {
		return domain.AgentDocument{}, wrap("get agent", err)
	}
	err = s.w.WithContext(ctx).Model(&agentRow{}).Where("id = ? AND version = ?", id, a.Version).
		Updates(map[string]any{"document": body, "document_rev": documentRev}).Error
	if err != nil {
		return domain.AgentDocument{}, wrap("get agent", err)
	}
	return domain.AgentDocument{Body: json.RawMessage(body), Version: a.Version, Metrics: a.Metrics}, nil
}

// prepareReads prepares the statements of the hot reads on the read pool.
func (s *core) prepareReads(ctx context.Context) error {
	db, err := s.r.DB()
	if err != nil {
		return wrap("prepare", err)
	}
	s.getDoc, err = db.PrepareContext(ctx, getDocumentQuery)
	return wrap("prepare", err)
}
