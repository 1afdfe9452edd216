// Package schedule fires the agents' schedules: every process looks for
// the due ones a few seconds apart (Firer.Run) and makes each due time one
// run of source `schedule` through the turn service, as a background
// message would be.
//
// Exactly once across processes rests on the store: a run of a schedule
// is accepted only in the transaction that moves the schedule from the
// due time it fires to its next one, on the condition that it still holds
// that due time (turn.Input.ScheduleDue). Every process may try; one
// commits, the others find the due time taken and make nothing. The next
// due time is computed from the time of the claim, so after downtime a
// schedule that missed several due times fires once and keeps its rhythm.
//
// A due time the agent cannot answer (inactive, in error during its
// cool-down, a provider it cannot call) makes no run: it is passed over
// with the reason as the schedule's last error.
//
// A schedule with a target (a Telegram chat, a Discord channel) is fired
// by the replica running the agent's bot (Holders), which has the reply
// sent there once the run ends (Chats, the connection supervisor); when no
// replica runs the bot, any fires it and the last error says the reply
// was not sent.
package schedule
