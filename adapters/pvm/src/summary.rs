//! `pvm-summary`: per kernel run, the inclusive ticks (and time) of each toplevel call, like
//! the console summary of the Octez debugger's `profile` command (spec A.1, B.7).
//!
//! ```text
//! run 1 (reboot)
//! %interpreter(decode): 35948 ticks (277000000ns)
//! ...
//! Full execution: 238595 ticks (339530000ns)
//! ```
//!
//! Runs are the profile's threads, in order (a profile without threads is one run, `run 1`).
//! In a time-ordered profile with exact calls, every toplevel call is its own line, in call
//! order; otherwise toplevel calls of one name are merged, in first-seen order.

use profconv_plugin::ir::text::push_shown_name;
use profconv_plugin::ir::{NONE, ProfileRef, ValueKind, format_fixed};
use profconv_plugin::{Context, PluginError, one_value_column, value_column};
use std::collections::BTreeMap;
use std::io::Write;

struct Entry {
    func: u32,
    ticks: i64,
    time: i64,
}

fn overflow() -> PluginError {
    PluginError::invalid_input("a run's total does not fit in 64 bits")
}

/// Writes the summary of `p`: of the column `value` names (`-O value=NAME`), else of `ticks`,
/// else of the first weight column; of a differential profile, `after` with a warning, as the
/// other emitters that show one column do.
pub fn emit_summary(
    p: &ProfileRef<'_>,
    out: &mut impl Write,
    value: Option<&str>,
    cx: &mut Context<'_>,
) -> Result<(), PluginError> {
    let weight = |name: &str| {
        p.value_type_index(name)
            .filter(|&c| p.value_types[c].kind == ValueKind::Weight)
    };
    let named = value.is_some_and(|v| !v.is_empty());
    let chosen = if named {
        value_column(p, value)?
    } else if p.meta("diff") == Some(profconv_plugin::ir::diff::DIFF_COLUMNS) {
        one_value_column(p, None, cx)?
    } else {
        weight("ticks").or_else(|| p.default_weight())
    };
    let Some(ticks) = chosen.filter(|&c| p.value_types[c].kind == ValueKind::Weight) else {
        return Err(match chosen {
            Some(c) => PluginError::bad_option(format!(
                "{}pvm-summary sums a weight column; '{}' counts events",
                match value {
                    Some(v) if named => format!("option value={v}: "),
                    _ => String::new(),
                },
                p.value_type_name(c)
            )),
            None => PluginError::unsupported(
                "pvm-summary needs a weight column (ticks); this profile has none",
            ),
        });
    };
    let time = weight("time_ns").filter(|&c| c != ticks);
    let calls = p
        .value_type_index("calls")
        .filter(|&c| p.value_types[c].kind == ValueKind::Count);
    // The column's name comes from the input too (a callgrind `events:` line): escaped like
    // the names, so that it cannot drive the terminal the summary is printed on.
    let mut label = String::new();
    push_shown_name(&mut label, p.value_type_name(ticks));
    let ordered = p.is_ordered() && calls.is_some();

    // The root func of every stack, in one forward pass (prefix < index).
    let ns = p.n_stacks();
    let mut root = vec![0u32; ns];
    for s in 0..ns {
        let prefix = p.stack_prefix[s];
        root[s] = if prefix == NONE {
            p.stack_func(s as u32)
        } else {
            root[prefix as usize]
        };
    }
    if p.n_threads() == 0 && p.n_samples() == 0 {
        // Nothing at all (every run left out, or an empty input from another format).
        return Ok(());
    }
    let n_runs = p.n_threads().max(1);
    let mut runs: Vec<Vec<Entry>> = (0..n_runs).map(|_| Vec::new()).collect();
    let mut current: Vec<Option<usize>> = vec![None; n_runs];
    let mut by_func: BTreeMap<(usize, u32), usize> = BTreeMap::new();
    for i in 0..p.n_samples() {
        let run = (p.sample_thread_of(i) as usize).min(n_runs - 1);
        let s = p.sample_stack[i] as usize;
        let func = root[s];
        let entries = &mut runs[run];
        let e = if ordered {
            let starts =
                p.stack_prefix[s] == NONE && calls.is_some_and(|c| p.sample_values[c][i] > 0);
            match current[run] {
                Some(e) if !starts && entries[e].func == func => e,
                _ => {
                    entries.push(Entry {
                        func,
                        ticks: 0,
                        time: 0,
                    });
                    current[run] = Some(entries.len() - 1);
                    entries.len() - 1
                }
            }
        } else {
            *by_func.entry((run, func)).or_insert_with(|| {
                entries.push(Entry {
                    func,
                    ticks: 0,
                    time: 0,
                });
                entries.len() - 1
            })
        };
        let entry = &mut entries[e];
        entry.ticks = entry
            .ticks
            .checked_add(p.sample_values[ticks][i])
            .ok_or_else(overflow)?;
        if let Some(t) = time {
            entry.time = entry
                .time
                .checked_add(p.sample_values[t][i])
                .ok_or_else(overflow)?;
        }
    }
    let tick_decimals = p.value_types[ticks].decimals;
    let time_decimals = time.map_or(0, |t| p.value_types[t].decimals);
    for (k, entries) in runs.iter().enumerate() {
        // Names with their control characters escaped, as `profconv tree` shows them: one
        // entry per line whatever a name holds.
        let mut name = String::new();
        if p.n_threads() > 0 {
            push_shown_name(&mut name, p.strings.get(p.thread_name[k]));
            writeln!(out, "{name}")?;
        } else {
            writeln!(out, "run 1")?;
        }
        let (mut sum, mut sum_time) = (0i64, 0i64);
        for e in entries {
            name.clear();
            push_shown_name(&mut name, p.func_name_str(e.func));
            write!(
                out,
                "{name}: {} {label}",
                format_fixed(e.ticks, tick_decimals)
            )?;
            if time.is_some() {
                write!(out, " ({}ns)", format_fixed(e.time, time_decimals))?;
            }
            writeln!(out)?;
            sum = sum.checked_add(e.ticks).ok_or_else(overflow)?;
            sum_time = sum_time.checked_add(e.time).ok_or_else(overflow)?;
        }
        write!(
            out,
            "Full execution: {} {label}",
            format_fixed(sum, tick_decimals)
        )?;
        if time.is_some() {
            write!(out, " ({}ns)", format_fixed(sum_time, time_decimals))?;
        }
        writeln!(out)?;
    }
    Ok(())
}
