extension Result {
    /// The error, if this is a failure.
    public var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
