use profiler_core::probe;

fn parse(s: &str) -> Result<u32, std::num::ParseIntError> {
    let n = probe!("parse", layer = "io", phase = "load" => {
        let n: u32 = s.parse()?;
        n * 2
    });
    Ok(n)
}

fn early(x: i32) -> i32 {
    let y = probe!("early", layer = "l" => {
        if x < 0 {
            return -1;
        }
        x + 1
    });
    y * 10
}

// The block form as a function's tail: its braces are no `unused_braces` (an error under
// `-D warnings`, in the build without `enable` before).
#[deny(unused_braces)]
fn tail(x: u32) -> u32 {
    probe!("tail" => { x + 1 })
}

fn main() {
    assert_eq!(tail(1), 2);
    let v = probe!("x", layer = "l" => { 1 + 2 });
    assert_eq!(v, 3);
    let unit: () = probe!("unit" => {});
    let () = unit;
    let s = probe!("string", layer = "l", phase = "fwd", => { String::from("a") });
    assert_eq!(s, "a");
    assert_eq!(parse("4"), Ok(8));
    assert!(parse("x").is_err());
    assert_eq!(early(-5), -1);
    assert_eq!(early(1), 20);
    let mut total = 0;
    for i in 0..4 {
        probe!("loop_body" => {
            if i == 1 {
                continue;
            }
            if i == 3 {
                break;
            }
            total += i;
        });
    }
    assert_eq!(total, 2);
}
