package store

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// memoryColumns are the columns a listed or searched memory shows: all but
// the embedding (kilobytes nobody reads there) and the terms.
var memoryColumns = []string{"id", "agent_id", "user_id", "text", "source", "conversation_id", "embedding_model", "created_at"}

// CreateMemory stores m for agent m.AgentID of account accountID, with
// its search terms (space-separated tokens), and returns it with ID and,
// when zero, CreatedAt (now) filled in. At MaxMemories it drops the oldest
// memories of m's scope (its agent and UserID; the agent's oldest when that
// scope has none) when dropOldest, else fails with a "memory"
// ErrQuotaExceeded. It counts the memory in the analytics of its hour. A
// text out of 1 to MaxMemoryText characters or an unknown source is
// ErrInvalid naming the field; ErrNotFound for a missing agent or one of
// another account.
func (s Memories) CreateMemory(ctx context.Context, accountID string, m domain.Memory, terms string, dropOldest bool) (domain.Memory, error) {
	if err := checkMemory(m); err != nil {
		return domain.Memory{}, wrap("create memory", err)
	}
	m = newMemory(m, s.now())
	row := fromMemory(m, terms)
	err := s.write(ctx, "create memory", func(tx *gorm.DB) error {
		if err := lockOwned(tx, accountID, m.AgentID); err != nil {
			return err
		}
		if err := makeRoom(tx, m, dropOldest); err != nil {
			return err
		}
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		return addHourStats(tx, hourStatsRow{AgentID: row.AgentID, Hour: hourOf(m.CreatedAt), MemoriesSaved: 1})
	})
	if err != nil {
		return domain.Memory{}, err
	}
	return m, nil
}

// CreateMemories stores ms, memories of one agent, with their search terms
// (terms[i] for ms[i]) as CreateMemory stores one, in one transaction: all
// of them or, on any error, none. It drops no memory to make room: where ms
// would take the agent past MaxMemories it fails with the "memory"
// ErrQuotaExceeded. A memory that is not one is ErrInvalid naming the
// field; ErrNotFound for a missing agent or one of another account.
func (s Memories) CreateMemories(ctx context.Context, accountID string, ms []domain.Memory, terms []string) ([]domain.Memory, error) {
	if len(ms) == 0 || len(terms) != len(ms) {
		return nil, wrap("create memories", fieldError("memories", "must be one or more, each with its terms"))
	}
	t := s.now()
	out := make([]domain.Memory, len(ms))
	rows := make([]memoryRow, len(ms))
	saved := map[time.Time]int64{}
	for i, m := range ms {
		if err := checkMemory(m); err != nil {
			return nil, wrap("create memories", err)
		}
		if m.AgentID != ms[0].AgentID {
			return nil, wrap("create memories", fieldError("agentId", "must be one agent's"))
		}
		out[i] = newMemory(m, t)
		rows[i] = fromMemory(out[i], terms[i])
		saved[hourOf(out[i].CreatedAt)]++
	}
	err := s.write(ctx, "create memories", func(tx *gorm.DB) error {
		agentID := ms[0].AgentID
		if err := lockOwned(tx, accountID, agentID); err != nil {
			return err
		}
		var n int64
		if err := tx.Model(&memoryRow{}).Where("agent_id = ?", agentID).Count(&n).Error; err != nil {
			return err
		}
		if n+int64(len(rows)) > domain.MaxMemories {
			return quotaError("memory", domain.MaxMemories, int(n))
		}
		if err := tx.CreateInBatches(&rows, chunkInsertBatch).Error; err != nil {
			return err
		}
		// In the hours' order, as every writer adds to them.
		for _, hour := range slices.SortedFunc(maps.Keys(saved), time.Time.Compare) {
			if err := addHourStats(tx, hourStatsRow{AgentID: ctext(agentID), Hour: hour, MemoriesSaved: saved[hour]}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// newMemory is m as it is stored at t: with an id, and made at t unless it
// says when.
func newMemory(m domain.Memory, t time.Time) domain.Memory {
	m.ID = newID("mem_", t)
	if m.CreatedAt.IsZero() {
		m.CreatedAt = t
	}
	m.CreatedAt = m.CreatedAt.UTC().Truncate(time.Millisecond)
	return m
}

// checkMemory refuses what no memory may hold.
func checkMemory(m domain.Memory) error {
	if !validLength(m.Text, 1, domain.MaxMemoryText) {
		return fieldError("text", "must be 1 to 2000 characters")
	}
	if m.Source != domain.MemorySourceAgent && m.Source != domain.MemorySourceAPI {
		return fieldError("source", `must be "agent" or "api"`)
	}
	return nil
}

// makeRoom keeps m's agent under MaxMemories before m is added: at the
// limit it drops the oldest memories of m's scope (the agent's oldest when
// the scope has none) when dropOldest, else fails with the quota error.
// The caller holds the agent's row, so the count cannot change meanwhile.
func makeRoom(tx *gorm.DB, m domain.Memory, dropOldest bool) error {
	var n int64
	if err := tx.Model(&memoryRow{}).Where("agent_id = ?", m.AgentID).Count(&n).Error; err != nil {
		return err
	}
	if n < domain.MaxMemories {
		return nil
	}
	if !dropOldest {
		return quotaError("memory", domain.MaxMemories, int(n))
	}
	oldest := tx.Model(&memoryRow{}).Where("agent_id = ?", m.AgentID).Order("created_at").Order("id").
		Limit(int(n - domain.MaxMemories + 1)).Session(&gorm.Session{})
	var ids []string
	if err := oldest.Where("user_id = ?", m.UserID).Pluck("id", &ids).Error; err != nil {
		return err
	}
	if len(ids) == 0 {
		if err := oldest.Pluck("id", &ids).Error; err != nil {
			return err
		}
	}
	return tx.Where("id IN ?", ids).Delete(&memoryRow{}).Error
}

// ListMemories returns a page of the memories of agent agentID of account
// accountID, newest first, and how many match q. Their Embedding is nil.
// It returns ErrNotFound for a missing agent or one of another account.
func (s Memories) ListMemories(ctx context.Context, accountID, agentID string, q domain.MemoryQuery) ([]domain.Memory, int64, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, 0, wrap("list memories", err)
	}
	sel := db.Model(&memoryRow{}).Where("agent_id = ?", agentID)
	if q.UserID != nil {
		sel = sel.Where("user_id = ?", *q.UserID)
	}
	rows, total, err := newestPage[memoryRow](sel, q.Page, q.Limit, memoryColumns)
	if err != nil {
		return nil, 0, wrap("list memories", err)
	}
	return toMemories(rows), total, nil
}

// DeleteMemory deletes memory id of agent agentID of account accountID:
// ErrNotFound when the agent is not the account's, ErrMemoryNotFound when
// the memory is not the agent's.
func (s Memories) DeleteMemory(ctx context.Context, accountID, agentID, id string) error {
	return s.write(ctx, "delete memory", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		return deleteRow(tx, &memoryRow{}, agentID, id, domain.ErrMemoryNotFound)
	})
}

// DeleteUserMemories deletes the memories agent agentID of account
// accountID keeps about user userID (not the agent-wide ones) and returns
// how many went. An empty userID is ErrInvalid: forgetting "nobody" would
// otherwise forget what the agent keeps for everyone. It returns
// domain.ErrNotFound for a missing agent or one of another account.
func (s Memories) DeleteUserMemories(ctx context.Context, accountID, agentID, userID string) (int64, error) {
	if userID == "" {
		return 0, wrap("delete user memories", fieldError("userId", "must not be empty"))
	}
	var deleted int64
	err := s.write(ctx, "delete user memories", func(tx *gorm.DB) error {
		if err := ownedAgent(tx, accountID, agentID); err != nil {
			return err
		}
		res := tx.Where("agent_id = ? AND user_id = ?", agentID, userID).Delete(&memoryRow{})
		deleted = res.RowsAffected
		return res.Error
	})
	return deleted, err
}

// SearchMemories returns the memories of agent agentID of account
// accountID in scope (the users listed, "" for agent-wide) whose terms
// hold any of terms, through the full-text index, newest first, at most
// limit; and how many memories the scope holds, for the caller's ranking.
// Their Embedding is nil. ErrNotFound for a missing agent or one of another
// account.
func (s Memories) SearchMemories(ctx context.Context, accountID, agentID string, scope []string, terms []string, limit int) ([]domain.Memory, int64, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, 0, wrap("search memories", err)
	}
	var rows []memoryRow
	total, err := s.search(memoriesIn(db, agentID, scope), "memories", terms, limit, &rows, func(q *gorm.DB) *gorm.DB {
		return q.Select(memoryColumns).Order("created_at DESC").Order("id DESC")
	})
	if err != nil {
		return nil, 0, wrap("search memories", err)
	}
	return toMemories(rows), total, nil
}

// MemoryVectors returns the memories of agent agentID of account accountID
// in scope (as SearchMemories) embedded by model, as listed and with their
// Embedding, for the caller to rank by vector and answer as they are.
// ErrNotFound for a missing agent or one of another account.
func (s Memories) MemoryVectors(ctx context.Context, accountID, agentID string, scope []string, model string) ([]domain.Memory, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, wrap("memory vectors", err)
	}
	var rows []memoryRow
	err := embeddedBy(memoriesIn(db, agentID, scope), "memories", model).
		Select(append(slices.Clone(memoryColumns), "embedding")).Find(&rows).Error
	if err != nil {
		return nil, wrap("memory vectors", err)
	}
	return toMemories(rows), nil
}

// SetMemoryEmbeddings stores vectors made later by model (the agent's
// model changed, or a memory was saved while embeddings failed) on agent
// agentID's memories, by id. Ids that are not the agent's are skipped.
func (s Memories) SetMemoryEmbeddings(ctx context.Context, agentID, model string, vectors map[string][]float32) error {
	return s.setEmbeddings(ctx, "set memory embeddings", "memories", agentID, model, vectors)
}

// StaleMemories returns at most limit memories of scope (as
// SearchMemories) not embedded by model, oldest first, so they can be
// embedded again when the agent's embedding model changed. It returns
// domain.ErrNotFound for a missing agent or one of another account.
func (s Memories) StaleMemories(ctx context.Context, accountID, agentID string, scope []string, model string, limit int) ([]domain.Memory, error) {
	db := s.read(ctx)
	if err := ownedAgent(db, accountID, agentID); err != nil {
		return nil, wrap("stale memories", err)
	}
	var rows []memoryRow
	err := staleFor(memoriesIn(db, agentID, scope), "memories", model).Select(memoryColumns).
		Order("created_at").Order("id").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, wrap("stale memories", err)
	}
	return toMemories(rows), nil
}

// memoriesIn selects the memories of agentID in scope (user ids, "" for
// agent-wide ones); a nil scope is every memory of the agent.
func memoriesIn(db *gorm.DB, agentID string, scope []string) *gorm.DB {
	q := db.Model(&memoryRow{}).Where("agent_id = ?", agentID)
	if scope == nil {
		return q // every memory of the agent
	}
	return q.Where("user_id IN ?", scope)
}

func fromMemory(m domain.Memory, terms string) memoryRow {
	return memoryRow{
		ID: ctext(m.ID), AgentID: ctext(m.AgentID), UserID: ctext(m.UserID), Text: m.Text, Source: m.Source,
		ConversationID: m.ConversationID, Terms: storedTerms(terms), Embedding: encodeVector(m.Embedding),
		EmbeddingModel: m.EmbeddingModel, CreatedAt: m.CreatedAt,
	}
}

func toMemories(rows []memoryRow) []domain.Memory {
	out := make([]domain.Memory, len(rows))
	for i, r := range rows {
		out[i] = domain.Memory{
			ID: string(r.ID), AgentID: string(r.AgentID), UserID: string(r.UserID), Text: r.Text, Source: r.Source,
			ConversationID: r.ConversationID, CreatedAt: utc(r.CreatedAt), Embedding: decodeVector(r.Embedding),
			EmbeddingModel: r.EmbeddingModel,
		}
	}
	return out
}
