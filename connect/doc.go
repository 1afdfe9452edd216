// Package connect runs agents on chat platforms. A Supervisor
// (supervisor.go) keeps one runner per (agent, platform) that should run:
// the platform is in the agent's clients and the agent is not inactive (a
// connection whose credentials are missing from settings.secrets gets no
// runner, only its disabled state). A runner (runner.go) connects only
// while it holds that connection's lease in the database, so across
// replicas at most one is connected and the others stand by with no
// goroutine. The supervisor's lease loop (leases.go) renews all of a
// replica's leases in one statement and takes free connections up to the
// replica's share. A connection keeps its cursor, state and message counts
// in the store. The messages it takes go to its inbox (inbox.go: Take,
// Resume) with the cursor in one write, and leave it when answered, so a
// stop, a crash or a lease move loses none; the messages of one chat are
// answered one at a time (dispatch.go). A stopping runner stops fetching
// and drains what it holds before releasing its lease.
//
// One sub-package per platform implements Platform: connect/telegram,
// connect/discord and connect/x (platform id "twitter"), each with a
// wire-format test server (telegramtest, discordtest, xtest). A Platform
// decides which messages to take, reads each back into a turn.Input, and
// sends the replies; Conn.Answer (answer.go) does the rest: it asks the
// agent through a Turner (for a post of the agent's own, such as X's
// scheduled ones, with turn.Shaping.Post), with the platform's typing
// indicator on (Indicate), finishes the message in the inbox just before
// the reply goes, so none goes out twice, sends the reply in parts (Split)
// through the platform's Reply.Send, and counts what went in and out.
// Conn.AnswerText does the same for an answer of the platform's own (a bot
// command's). *turn.Service implements Turner: a platform message takes the
// same turn as the API's Send Message, under the same rule of whether the
// agent can answer (turn.CanAnswer). An agent that cannot answer now gives
// an error matching ErrNotAnswering and the message is dropped
// (Conn.Unanswered counts it), as is one a spent budget refused (reason
// budget); no failure is ever sent to the chat.
// Conn.Admit applies a platform's allowedUsers and userRateLimit
// (limits.go) before a message is taken.
//
// A turn whose run waits for decisions on its tool calls is answered
// later (follow.go): a follower of the replica's asks the admins of
// settings.<platform>.adminUsers through the platform's Reply.Ask
// (approvals.go) and sends the run's reply once it has ended. Presses of
// the approval buttons are taken like messages (PressInbound) and decided
// by Conn.Press.
//
// It knows nothing of HTTP: it depends on the small interfaces it declares
// (Stores, Turner, Platform) and imports only domain, turn and telemetry.
// connecttest is the fixture the platforms' tests share.
package connect
