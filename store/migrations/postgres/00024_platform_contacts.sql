-- The platform users who wrote to an agent's bot in private, by username:
-- an approval message goes to each admin of settings.<platform>.adminUsers
-- in a private chat, and an entry that names a username finds the user
-- through them (no platform resolves a username for a bot).
--
-- +goose Up
CREATE TABLE platform_contacts (
    agent_id text COLLATE "C" NOT NULL,
    platform text COLLATE "C" NOT NULL,
    user_id text COLLATE "C" NOT NULL,
    username text COLLATE "C" NOT NULL,
    seen_at timestamp with time zone NOT NULL,
    CONSTRAINT platform_contacts_pkey PRIMARY KEY (agent_id, platform, user_id)
);
CREATE INDEX idx_platform_contacts_username ON platform_contacts (agent_id, platform, username);

-- +goose Down
DROP INDEX idx_platform_contacts_username;
DROP TABLE platform_contacts;
