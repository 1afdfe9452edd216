// Package connect runs agents on chat platforms: a Supervisor keeps one
// connection per (agent, platform) that should run, across replicas, by a
// lease in the database; each connection keeps its cursor and state in the
// store and turns platform messages into agent turns through a Turner. It
// knows nothing of HTTP: it depends on the small interfaces it declares
// (Store, Turner, Platform). One sub-package per platform implements
// Platform (connect/telegram, connect/discord).
package connect
