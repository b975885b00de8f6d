use profiler_core::profiled;

trait Module {
    fn forward(&self, x: u32) -> u32;

    /// A default method with a body can be annotated in the trait.
    #[profiled(layer = "base", phase = "bwd")]
    fn backward(&self, g: u32) -> u32 {
        g + self.forward(0)
    }
}

struct Double;

impl Module for Double {
    #[profiled(layer = "double", phase = "fwd")]
    fn forward(&self, x: u32) -> u32 {
        x * 2
    }
}

struct Custom;

impl Module for Custom {
    fn forward(&self, x: u32) -> u32 {
        x + 1
    }

    #[profiled(layer = "custom", phase = "bwd")]
    fn backward(&self, g: u32) -> u32 {
        g * 10
    }
}

impl std::fmt::Display for Custom {
    #[profiled(name = "Custom::fmt")]
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "custom")
    }
}

fn main() {
    assert_eq!(Double.forward(3), 6);
    assert_eq!(Double.backward(1), 1);
    assert_eq!(Custom.backward(1), 10);
    let dynamic: &dyn Module = &Custom;
    assert_eq!(dynamic.forward(1), 2);
    assert_eq!(Custom.to_string(), "custom");
}
