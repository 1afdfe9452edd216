package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
)

// An approval message's buttons give back "approve:<callId>" or
// "deny:<callId>" when pressed: the call's id alone finds its run, and
// fits Telegram's 64 bytes of callback data.
const (
	approveVerb = "approve"
	denyVerb    = "deny"
)

// maxArguments is how many characters of a call's arguments an approval
// message shows.
const maxArguments = 1000

// What a press is answered, to the one who pressed alone.
const (
	noticeApproved       = "Approved"
	noticeDenied         = "Denied"
	noticeNotAllowed     = "not allowed"
	noticeAlreadyDecided = "already decided"
	noticeUnknown        = "unknown button"
	noticeFailed         = "the decision could not be recorded; try again"
)

// Button is a button of an approval message.
type Button struct {
	Label string
	// Data is what a press of it gives back (Telegram's callback data,
	// Discord's custom_id), for Conn.Press.
	Data string
	// Approve is set on the button that approves, for a platform that
	// colours it.
	Approve bool
}

// Ask is an approval message for an admin: sent to the private chat of
// the user Admin (a user id), Text with the two Buttons, approve first.
type Ask struct {
	Admin   string
	Text    string
	Buttons []Button
}

// PressOutcome is what a press of an approval button did: Notice answers
// the one who pressed, and Edit, when the press decided the call, is the
// approval message's new text ("" leaves the message as it is).
type PressOutcome struct {
	Notice, Edit string
}

// pressPrefix marks the inbox entries of button presses. A press is taken
// like a message (stored with the platform's cursor, so none is lost or
// handled twice) on a line of its own per user, so it never waits behind
// a turn.
const pressPrefix = "press:"

// PressInbound is a press of a button, with the platform's id of it
// (unique per bot), as a message to Take; user is who pressed.
func PressInbound(id, user string, payload json.RawMessage) Inbound {
	return Inbound{ID: pressPrefix + id, Chat: pressPrefix + user, Payload: payload}
}

// IsPress reports whether in was made by PressInbound: a Handler calls
// Press for it, not Answer.
func IsPress(in Inbound) bool { return strings.HasPrefix(in.ID, pressPrefix) }

// adminsOf reads settings.<platform>.adminUsers.
func adminsOf(settings json.RawMessage) userSet {
	var members struct {
		AdminUsers json.RawMessage `json:"adminUsers"`
	}
	_ = json.Unmarshal(settings, &members)
	return usersOf(members.AdminUsers)
}

// IsAdmin reports whether settings.<platform>.adminUsers names user.
func (c *Conn) IsAdmin(user Sender) bool { return c.admins.has(user) }

// NoteContact records that user wrote to the bot in private, when
// adminUsers names them by username: an approval message reaches an
// admin only in a private chat, which the user's id alone finds, and a
// bot cannot look a username up. A Platform calls it for each private
// message it answers.
func (c *Conn) NoteContact(ctx context.Context, user Sender) {
	if _, named := c.admins.names[normalizeName(user.Username)]; !named || user.ID == "" {
		return
	}
	if err := c.stores.Connections.RememberContact(ctx, c.Agent.ID, c.platform, user.ID, user.Username); err != nil {
		c.Logger.WarnContext(ctx, "remember an admin's private chat", "user", user.ID, "error", err)
	}
}

// askAdmins sends each admin that can be reached one approval message
// (r.Ask) per call run waits for that none was sent about yet (asked
// holds those, and gains these). A Reply without Ask (X), or no admins,
// sends nothing: the run waits for the API or the console.
func (c *Conn) askAdmins(ctx context.Context, run domain.Run, asked map[string]bool, r Reply) {
	var calls []domain.WaitingCall
	for _, call := range run.Waiting() {
		if !asked[call.ID] {
			asked[call.ID] = true
			calls = append(calls, call)
		}
	}
	if len(calls) == 0 || r.Ask == nil || c.admins.empty() {
		return
	}
	admins := c.adminIDs(ctx)
	for _, call := range calls {
		a := askOf(c.Agent.Fields.Name(), run, call)
		for _, id := range admins {
			a.Admin = id
			_ = r.Ask(ctx, a) // Ask reports its failure itself, as Send does
		}
	}
}

// adminIDs are the user ids of the admins a message can reach: every id
// entry (a private chat is found by the user's id), and each username
// entry whose user wrote to the bot in private.
func (c *Conn) adminIDs(ctx context.Context) []string {
	ids := slices.Sorted(maps.Keys(c.admins.ids))
	for _, name := range slices.Sorted(maps.Keys(c.admins.names)) {
		id, err := c.stores.Connections.ContactByUsername(ctx, c.Agent.ID, c.platform, name)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			c.Logger.InfoContext(ctx, "approval message not sent: the admin has not written to the bot in private", "admin", name)
		case err != nil:
			c.Logger.WarnContext(ctx, "find an admin's private chat", "admin", name, "error", err)
		case !slices.Contains(ids, id):
			ids = append(ids, id)
		}
	}
	return ids
}

// askOf is the approval message of call, which run of agent waits for.
func askOf(agent string, run domain.Run, call domain.WaitingCall) Ask {
	var b strings.Builder
	fmt.Fprintf(&b, "%s asks to run the tool %s", agent, call.Name)
	if run.UserID != "" {
		who := run.UserID
		if run.Input.UserName != "" {
			who = run.Input.UserName + " (" + run.UserID + ")"
		}
		fmt.Fprintf(&b, " for %s", who)
	}
	fmt.Fprintf(&b, " with:\n%s", cut(string(call.Arguments), maxArguments))
	return Ask{Text: b.String(), Buttons: []Button{
		{Label: "Approve", Data: approveVerb + ":" + call.ID, Approve: true},
		{Label: "Deny", Data: denyVerb + ":" + call.ID},
	}}
}

// cut shortens s to at most n characters, the last an ellipsis when it
// was cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Press decides the call named by the data of an approval button that
// user pressed, when adminUsers names them; message is the approval
// message's text, which the outcome's edit adds to. The decision is
// made as "<platform>:<user id>" (with the username, when known). A call
// no longer waiting (decided through the API, by another admin, or
// expired) is "already decided" and changes nothing.
func (c *Conn) Press(ctx context.Context, user Sender, data, message string) PressOutcome {
	verb, callID, _ := strings.Cut(data, ":")
	if (verb != approveVerb && verb != denyVerb) || callID == "" {
		return PressOutcome{Notice: noticeUnknown}
	}
	if !c.admins.has(user) {
		return PressOutcome{Notice: noticeNotAllowed}
	}
	approve := verb == approveVerb
	run, err := c.stores.Runs.RunOfWaitingCall(ctx, c.Agent.ID, callID)
	if err == nil {
		_, err = c.turner.Decide(ctx, c.Agent.AccountID, c.Agent.ID, run.ID, []domain.Decision{{CallID: callID,
			Approve: approve, By: c.platform + ":" + user.ID, ByName: user.Username, DecidedAt: time.Now()}}, false)
	}
	if err != nil {
		if decidedAlready(err) {
			return PressOutcome{Notice: noticeAlreadyDecided}
		}
		c.Logger.WarnContext(ctx, "approval not recorded", "call", callID, "error", err)
		return PressOutcome{Notice: noticeFailed}
	}
	notice, who := noticeDenied, c.platform+" user "+user.ID
	if approve {
		notice = noticeApproved
	}
	if user.Username != "" {
		who = "@" + user.Username
	}
	return PressOutcome{Notice: notice, Edit: message + "\n\n" + notice + " by " + who}
}

// decidedAlready reports whether err says the call pressed waits no more.
func decidedAlready(err error) bool {
	var de *domain.Error
	return errors.As(err, &de) && (errors.Is(de, domain.ErrRunNotFound) || de.Code == domain.CodeNotWaiting ||
		de.Code == domain.CodeInvalid && de.Field == "decisions")
}
