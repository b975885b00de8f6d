use profiler_core::profiled;

#[profiled(layer = "raw")]
fn r#type() -> &'static str {
    "type"
}

struct S;

impl S {
    #[profiled]
    fn r#match(&self) -> u8 {
        1
    }
}

fn main() {
    assert_eq!(r#type(), "type");
    assert_eq!(S.r#match(), 1);
}
