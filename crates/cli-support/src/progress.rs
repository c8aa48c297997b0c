//! Progress bars on stderr for long work (converting, hashing, quantizing, verifying): drawn only
//! when stderr is a terminal and `--quiet` is off, so scripts and logs never see them.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn target() -> ProgressDrawTarget {
    if crate::run::mode().quiet || !std::io::stderr().is_terminal() {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    }
}

fn styled(bar: ProgressBar, template: &str, message: &str) -> ProgressBar {
    bar.set_style(
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message.to_owned());
    bar
}

/// A bar over `total` bytes: `message [=====>    ] 1.2 GiB/3.4 GiB (410 MiB/s, eta 5s)`.
#[must_use]
pub fn bytes(total: u64, message: &str) -> ProgressBar {
    styled(
        ProgressBar::with_draw_target(Some(total), target()),
        "{msg} [{bar:30}] {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, eta {eta})",
        message,
    )
}

/// A bar over `total` items named `unit` (`tensors`, `files`, `chunks`).
#[must_use]
pub fn items(total: u64, unit: &str, message: &str) -> ProgressBar {
    styled(
        ProgressBar::with_draw_target(Some(total), target()),
        &format!("{{msg}} [{{bar:30}}] {{pos}}/{{len}} {unit} ({{elapsed}}, eta {{eta}})"),
        message,
    )
}

/// A spinner counting `unit`s when the total is unknown.
#[must_use]
pub fn spinner(unit: &str, message: &str) -> ProgressBar {
    let bar = styled(
        ProgressBar::with_draw_target(None, target()),
        &format!("{{spinner}} {{msg}} {{human_pos}} {unit} ({{per_sec}}) {{elapsed}}"),
        message,
    );
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}
