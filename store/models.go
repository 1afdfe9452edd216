package store

import (
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/schema"
)

// ctext is a text column that compares byte-wise on every backend (COLLATE
// "C" on PostgreSQL, SQLite's default BINARY), so ORDER BY and the indexes
// give the same order on SQLite and PostgreSQL whatever the database locale.
type ctext string

// GormDBDataType gives the column type per dialect.
func (ctext) GormDBDataType(db *gorm.DB, _ *schema.Field) string {
	if db.Dialector.Name() == "postgres" {
		return `text COLLATE "C"`
	}
	return "text"
}

// accountRow is a row of accounts.
type accountRow struct {
	ID                 ctext  `gorm:"primaryKey"`
	Name               ctext  `gorm:"not null;uniqueIndex:idx_accounts_name"`
	Tier               string `gorm:"not null"`
	RPM                int    `gorm:"column:rpm;not null"`
	EndpointMultiplier int    `gorm:"not null"`
	AgentQuota         int    `gorm:"not null"`
	// MonthlyBudgetMicros is the operator's monthly budget, 0 for none.
	MonthlyBudgetMicros int64     `gorm:"not null;default:0"`
	CreatedAt           time.Time `gorm:"not null;autoCreateTime:false"`
	// AgentCount is how many agents the account has, kept by the create
	// and delete transactions: the quota check and List's total read it
	// instead of counting rows.
	AgentCount int64 `gorm:"not null;default:0"`
	// WebhookCount is how many webhooks the account has, kept by the
	// webhook create and delete transactions: Create Agent skips looking
	// for webhooks to notify when it is 0.
	WebhookCount int64 `gorm:"not null;default:0"`
	// AgentSetVersion moves with every agent created or deleted in the
	// account: List's page starts are kept under it (see pageStarts).
	AgentSetVersion int64 `gorm:"not null;default:0"`

	Keys   []keyRow   `gorm:"foreignKey:AccountID;constraint:OnDelete:CASCADE"`
	Agents []agentRow `gorm:"foreignKey:AccountID;constraint:OnDelete:CASCADE"`
}

// TableName names the table.
func (accountRow) TableName() string { return "accounts" }

// keyRow is a row of api_keys. Only the SHA-256 of the key is kept.
type keyRow struct {
	ID         ctext     `gorm:"primaryKey"`
	AccountID  ctext     `gorm:"not null;index:idx_api_keys_account"`
	Prefix     ctext     `gorm:"not null;index:idx_api_keys_prefix"`
	Hash       ctext     `gorm:"not null;uniqueIndex:idx_api_keys_hash"`
	Scope      string    `gorm:"not null"`
	CreatedAt  time.Time `gorm:"not null;autoCreateTime:false"`
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
	LastUsedAt *time.Time
}

// TableName names the table.
func (keyRow) TableName() string { return "api_keys" }

// agentRow is a row of agents. Fields is the canonical JSON object of the
// agent's members; Name, ModelProvider, Model, DeleteProtection and Clients
// are derived from it on every write. Metrics live here as counters and error periods.
type agentRow struct {
	ID                 ctext  `gorm:"primaryKey;index:idx_agents_account_created,priority:3;index:idx_agents_account_name,priority:3;index:idx_agents_account_status,priority:3;index:idx_agents_updated,priority:2"`
	AccountID          ctext  `gorm:"not null;index:idx_agents_account_created,priority:1;index:idx_agents_account_name,priority:1;index:idx_agents_account_status,priority:1"`
	Name               ctext  `gorm:"not null;index:idx_agents_account_name,priority:2"`
	ModelProvider      string `gorm:"not null"`
	Model              string `gorm:"not null"`
	DeleteProtection   bool   `gorm:"not null"`
	Status             ctext  `gorm:"not null;index:idx_agents_account_status,priority:2"`
	StatusReason       string `gorm:"not null"`
	RetryAt            *time.Time
	Fields             string     `gorm:"type:text;not null"`
	Clients            string     `gorm:"type:text;not null;default:''"` // Fields' "clients", for List without decoding Fields; "" when unset
	CreatedAt          time.Time  `gorm:"not null;autoCreateTime:false;index:idx_agents_account_created,priority:2"`
	UpdatedAt          time.Time  `gorm:"not null;autoUpdateTime:false;index:idx_agents_updated,priority:1"`
	TotalMessages      int64      `gorm:"not null"`
	TotalConversations int64      `gorm:"not null"`
	ErrorSince         *time.Time // start of the current error period
	ErrorMillis        int64      `gorm:"not null"` // closed error periods, summed
	// Version grows with every change Get Agent shows (metrics aside): the
	// agent's ETag.
	Version int64 `gorm:"not null;default:1"`
	// Document is what Get Agent answers of the agent but its metrics,
	// written by the transaction of every change Get shows, so a read
	// copies it instead of decoding and rendering the fields; DocumentRev
	// says what rendered it (see documentRev), 0 before it was stored.
	Document    string `gorm:"type:text;not null;default:''"`
	DocumentRev int64  `gorm:"not null;default:0"`
	// KnowledgeDocs counts the agent's knowledge documents, moved by the
	// transactions that add and delete them, so a turn of an agent without
	// any skips the knowledge lookup.
	KnowledgeDocs int64 `gorm:"not null;default:0"`

	Conversations      []conversationRow `gorm:"foreignKey:AgentID;constraint:OnDelete:CASCADE"`
	Memories           []memoryRow       `gorm:"foreignKey:AgentID;constraint:OnDelete:CASCADE"`
	KnowledgeDocuments []knowledgeDocRow `gorm:"foreignKey:AgentID;constraint:OnDelete:CASCADE"`
	A2aTasks           []a2aTaskRow      `gorm:"foreignKey:AgentID;constraint:OnDelete:CASCADE"`
	Runs               []runRow          `gorm:"foreignKey:AgentID;constraint:OnDelete:CASCADE"`
	Schedules          []scheduleRow     `gorm:"foreignKey:AgentID;constraint:OnDelete:CASCADE"`
	Responses          []responseRow     `gorm:"foreignKey:AgentID;constraint:OnDelete:CASCADE"`
}

// TableName names the table.
func (agentRow) TableName() string { return "agents" }

// conversationRow is a row of conversations: one per agent and key (a room,
// or a user's direct conversation). MessageCount and LastMessageAt change in
// the transaction that stores an exchange.
type conversationRow struct {
	ID            ctext     `gorm:"primaryKey;index:idx_conversations_agent_active,priority:3;index:idx_conversations_agent_platform,priority:4"`
	AgentID       ctext     `gorm:"not null;uniqueIndex:idx_conversations_agent_key,priority:1;index:idx_conversations_agent_active,priority:1;index:idx_conversations_agent_platform,priority:1"`
	Key           ctext     `gorm:"not null;uniqueIndex:idx_conversations_agent_key,priority:2"`
	Kind          string    `gorm:"not null;default:''"`
	RoomID        string    `gorm:"not null;default:''"`
	UserID        string    `gorm:"not null;default:''"`
	Platform      ctext     `gorm:"not null;default:'api';index:idx_conversations_agent_platform,priority:2"`
	Title         string    `gorm:"type:text;not null;default:''"`
	MessageCount  int64     `gorm:"not null;default:0"`
	CreatedAt     time.Time `gorm:"not null;autoCreateTime:false"`
	LastMessageAt time.Time `gorm:"not null;default:CURRENT_TIMESTAMP;autoCreateTime:false;index:idx_conversations_agent_active,priority:2;index:idx_conversations_agent_platform,priority:3"`
	// Summary condenses the conversation's oldest Summarized messages, so
	// a turn sends it in place of them; "" and 0 for none.
	Summary    string `gorm:"type:text;not null;default:''"`
	Summarized int    `gorm:"not null;default:0"`

	Messages []messageRow          `gorm:"foreignKey:ConversationID;constraint:OnDelete:CASCADE"`
	Speakers []conversationUserRow `gorm:"foreignKey:ConversationID;constraint:OnDelete:CASCADE"`
}

// TableName names the table.
func (conversationRow) TableName() string { return "conversations" }

// conversationUserRow records that a user spoke in a conversation, so the
// conversations of a user are found through an index.
type conversationUserRow struct {
	ConversationID ctext `gorm:"primaryKey"`
	UserID         ctext `gorm:"primaryKey;index:idx_conversation_users_agent_user,priority:2"`
	AgentID        ctext `gorm:"not null;index:idx_conversation_users_agent_user,priority:1"`
}

// TableName names the table.
func (conversationUserRow) TableName() string { return "conversation_users" }

// messageRow is a row of messages.
type messageRow struct {
	ID               ctext     `gorm:"primaryKey;index:idx_messages_conversation_created,priority:3"`
	ConversationID   ctext     `gorm:"not null;index:idx_messages_conversation_created,priority:1"`
	Role             string    `gorm:"not null"`
	UserID           string    `gorm:"not null"`
	Text             string    `gorm:"type:text;not null"`
	Model            string    `gorm:"not null"`
	PromptTokens     int       `gorm:"not null"`
	CompletionTokens int       `gorm:"not null"`
	TokensUsed       int       `gorm:"not null;default:0"`
	CostMicros       int64     `gorm:"not null;default:0"`
	ResponseMillis   float64   `gorm:"not null;default:0"`
	Partial          bool      `gorm:"not null;default:false"`
	CreatedAt        time.Time `gorm:"not null;autoCreateTime:false;index:idx_messages_conversation_created,priority:2"`
	ToolCalls        string    `gorm:"type:text;not null;default:''"`
}

// TableName names the table.
func (messageRow) TableName() string { return "messages" }

// memoryRow is a row of memories: a fact an agent keeps about a user
// (UserID) or for everyone (UserID ""). Terms are the text's normalised
// search tokens, indexed for full-text search by the migration (see
// search.go); Embedding is its vector under EmbeddingModel (see
// encodeVector), empty when none.
type memoryRow struct {
	ID             ctext     `gorm:"primaryKey;index:idx_memories_agent_created,priority:3;index:idx_memories_agent_user_created,priority:4;index:idx_memories_agent_model,priority:3"`
	AgentID        ctext     `gorm:"not null;index:idx_memories_agent_created,priority:1;index:idx_memories_agent_user_created,priority:1;index:idx_memories_agent_model,priority:1"`
	UserID         ctext     `gorm:"not null;index:idx_memories_agent_user_created,priority:2"`
	Text           string    `gorm:"type:text;not null"`
	Source         string    `gorm:"not null"`
	ConversationID string    `gorm:"not null"` // where the model saved it; kept when that conversation is deleted
	Terms          string    `gorm:"type:text;not null"`
	Embedding      []byte    `gorm:"not null"`
	EmbeddingModel string    `gorm:"not null;index:idx_memories_agent_model,priority:2"`
	CreatedAt      time.Time `gorm:"not null;autoCreateTime:false;index:idx_memories_agent_created,priority:2;index:idx_memories_agent_user_created,priority:3"`
}

// TableName names the table.
func (memoryRow) TableName() string { return "memories" }

// knowledgeDocRow is a row of knowledge_documents: a document given to an
// agent, whose text lives in its chunks. ChunkCount and Bytes are kept so
// listing and the quota never read the chunks.
type knowledgeDocRow struct {
	ID         ctext     `gorm:"primaryKey;index:idx_knowledge_documents_agent_created,priority:3"`
	AgentID    ctext     `gorm:"not null;index:idx_knowledge_documents_agent_created,priority:1"`
	Name       string    `gorm:"not null"`
	ChunkCount int       `gorm:"not null"`
	Bytes      int64     `gorm:"not null"`
	CreatedAt  time.Time `gorm:"not null;autoCreateTime:false;index:idx_knowledge_documents_agent_created,priority:2"`

	Chunks []knowledgeChunkRow `gorm:"foreignKey:DocumentID;constraint:OnDelete:CASCADE"`
}

// TableName names the table.
func (knowledgeDocRow) TableName() string { return "knowledge_documents" }

// knowledgeChunkRow is a row of knowledge_chunks: the Seq-th piece of a
// document, searched like memories (Terms, Embedding). AgentID repeats the
// document's so that searches and re-embedding need no join.
type knowledgeChunkRow struct {
	ID             ctext  `gorm:"primaryKey;index:idx_knowledge_chunks_agent_model,priority:3"`
	DocumentID     ctext  `gorm:"not null;index:idx_knowledge_chunks_document_seq,priority:1"`
	AgentID        ctext  `gorm:"not null;index:idx_knowledge_chunks_agent;index:idx_knowledge_chunks_agent_model,priority:1"`
	Seq            int    `gorm:"not null;index:idx_knowledge_chunks_document_seq,priority:2"`
	Text           string `gorm:"type:text;not null"`
	Terms          string `gorm:"type:text;not null"`
	Embedding      []byte `gorm:"not null"`
	EmbeddingModel string `gorm:"not null;index:idx_knowledge_chunks_agent_model,priority:2"`
}

// TableName names the table.
func (knowledgeChunkRow) TableName() string { return "knowledge_chunks" }
