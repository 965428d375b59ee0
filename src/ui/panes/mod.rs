//! One file per pane. Each is a free function `render(frame, area, …)`
//! that reads state and draws; none changes anything.

pub mod answers;
pub mod figures;
pub mod footer;
pub mod header;
pub mod help;
pub mod histogram;
pub mod load;
pub mod osi;
pub mod progress;
pub mod responders;
pub mod sessions;
pub mod sparklines;
pub mod split;
