// Package speckit is kbkit's reducer kit, behind `kbkit spec`: it checks
// an implementation of the command model (a reducer, a Window, a planner,
// a tokenizer, in any language) against the language-neutral YAML cases of
// spec/, over the adapter protocol of spec/ADAPTER.md.
//
// Who uses it: teams writing a reducer or a client's core in another
// language, and their CI. Its packages:
//
//   - cases: the case files, their suites and the check of one case;
//   - adapter: the adapter protocol, both ends (a child process, and
//     `kbkit adapter` serving the reference);
//   - adapters: the adapters kbkit ships in Node.js and TypeScript, and
//     the JSON Schema of expectations files;
//   - report: verdicts against an expectations file, as TAP, JUnit or JSON;
//   - matrix: the results of several implementations side by side;
//   - fuzz: differential fuzzing against the reference, shrunk to cases;
//   - cli: the `kbkit spec` and `kbkit adapter` commands over them.
package speckit
